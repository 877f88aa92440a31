//! A registration read in place from its C array (`reg_infos`, what the server shim does) gives
//! the same segment as the same array converted first (`read_infos`) and as the Rust infos.

use rshm_abi::c::{c_info, destruct_value, read_infos, reg_infos};
use rshm_abi::types::pmix_info_t;
use rshm_gds::jobdata::{self, synthetic};
use rshm_gds::{Info, Value};

fn to_c(infos: &[Info]) -> Vec<pmix_info_t> {
    infos.iter().map(|i| c_info(i).unwrap()).collect()
}

fn same_segment(infos: &[Info]) {
    let host = Some(synthetic::host(0));
    let want = jobdata::build(host.as_deref(), infos)
        .unwrap()
        .0
        .encode(1)
        .unwrap();
    let mut c = to_c(infos);
    // SAFETY: `c` is a live array of infos written by `c_info`, unchanged meanwhile.
    let converted = unsafe { read_infos(c.as_ptr(), c.len()) }.unwrap();
    let got = jobdata::build(host.as_deref(), &converted).unwrap().0;
    assert!(got.encode(1).unwrap() == want, "converted");
    // SAFETY: as above.
    let view = unsafe { reg_infos(c.as_ptr(), c.len()) }.unwrap();
    let got = jobdata::build(host.as_deref(), view).unwrap().0;
    assert!(got.encode(1).unwrap() == want, "in place");
    for i in &mut c {
        // SAFETY: each value was written by `c_info` and is destructed once.
        unsafe { destruct_value(&mut i.value) };
    }
}

#[test]
fn in_place_registration_gives_the_same_segment() {
    same_segment(&synthetic::registration(300, 16));
    // Proc arrays only (the size comes from them), inside a job array, with a hostname that is
    // not its node's, a non-column key and a regex node map.
    let proc = |r: u32, host: &str| {
        Info::array(
            "pmix.pdata",
            vec![
                Info::new("pmix.rank", Value::ProcRank(r)),
                Info::new("pmix.hname", Value::String(host.into())),
                Info::new("pmix.locstr", Value::String(format!("L{r}"))),
                Info::new("pmix.lrank", Value::Uint16(r as u16)),
            ],
        )
    };
    same_segment(&[
        Info::new("pmix.nmap", Value::Regex(b"pmix[node[5:0-1]]\0".to_vec())),
        proc(0, "node00000"),
        Info::array("pmix.job.arr", vec![proc(1, "elsewhere")]),
        proc(2, "node00001"),
    ]);
}

/// The read-ahead takes a C proc array's column values without making a `Value`
/// (`CInfo::column`); this is what it must agree with. 6,000 ranks (more than one read-ahead
/// block); every fifth has one column key in another integer type or as the column's absent
/// pattern (each column, each type), the others are as a host sends them: the in-place
/// segment equals the Rust one.
#[test]
fn column_values_read_in_place_agree_with_the_values() {
    let odd = |r: u32| -> Value {
        match (r / 30) % 9 {
            0 => Value::Uint16(r as u16),
            1 => Value::Uint16(u16::MAX),
            2 => Value::Uint32(r),
            3 => Value::Uint32(u32::MAX),
            4 => Value::ProcRank(r),
            5 => Value::ProcRank(u32::MAX),
            6 => Value::Uint(r),
            7 => Value::Uint64(r as u64),
            _ => Value::Int32(r as i32),
        }
    };
    let mut infos = synthetic::registration_maps(6_000, 64);
    for r in 0..6_000u32 {
        let mut a = vec![Info::new("pmix.rank", Value::ProcRank(r))];
        for (n, key) in [
            "pmix.lrank",
            "pmix.nrank",
            "pmix.nodeid",
            "pmix.appnum",
            "pmix.apprank",
            "pmix.grank",
        ]
        .into_iter()
        .enumerate()
        {
            let v = if r % 5 == 0 && n as u32 == (r / 5) % 6 {
                odd(r)
            } else {
                synthetic::proc_value(r, 64, key).unwrap()
            };
            a.push(Info::new(key, v));
        }
        infos.push(Info::array("pmix.pdata", a));
    }
    same_segment(&infos);
}
