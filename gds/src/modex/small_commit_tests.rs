//! A commit's rank table encoded straight from its batch (`table::small`) is the table the
//! builder encodes for the same values.

use super::{FenceBatch, Posted, Scope};
use crate::table::small::RankTable;
use crate::value::Value;

/// The table a commit's batch makes through the builder (what a merge or a later commit of
/// the rank encodes), and straight from the batch: the same bytes, for random commits
/// (keys put twice, every scope, byte objects and archived values, none).
#[test]
fn a_rank_table_encodes_as_the_builder_encodes_it() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let scopes = [Scope::Local, Scope::Remote, Scope::Global];
    for round in 0..400 {
        let rank = next(5000) as u32;
        let mut batch = FenceBatch::new();
        for _ in 0..next(40) {
            let key = format!("k.{}", next(30));
            let scope = scopes[next(3) as usize];
            match next(4) {
                0 => batch.put(rank, scope, &key, &Value::Uint32(next(1 << 30) as u32)),
                1 => batch.put(
                    rank,
                    scope,
                    &key,
                    &Value::String("s".repeat(next(90) as usize)),
                ),
                _ => batch.put_bytes(rank, scope, &key, &vec![round as u8; next(300) as usize]),
            }
            .unwrap();
        }
        let items = batch.latest();
        let small = RankTable::plan(rank, items).unwrap();
        let mut direct = vec![0xa5; small.total_len()];
        small.write(&mut direct, 7).unwrap();
        let mut posted = Posted::unindexed();
        let mut again = FenceBatch::new();
        for i in batch.latest() {
            let scope = Scope::of_class(i.class).unwrap();
            again
                .put_stored(rank, scope, i.key, i.flags, i.bytes)
                .unwrap();
        }
        posted.apply(again).unwrap();
        let built = posted.table().encode(7).unwrap();
        assert_eq!(direct, built, "round {round}");
        assert_eq!(small.value_bytes(), posted.value_bytes(), "round {round}");
    }
}
