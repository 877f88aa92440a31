//! Posted data (standard ch. 5): what processes `PMIx_Put` + `PMIx_Commit`, and what a
//! collecting `PMIx_Fence` delivers from other nodes — the business-card exchange.
//!
//! A namespace's posted data is published as several tables (format.md section 5, `part`),
//! kept by its writer as [`PostedParts`]: a base table (fence data, and commits once
//! compacted), one table per rank that committed since (a commit rewrites only its rank's
//! table), and the RANK_UNDEF index. A commit, or a whole fence batch, is one transaction, so
//! readers see all of it or none of it. A later put of a key replaces the earlier one
//! (whatever its scope); a reader that already holds the old value keeps a valid view of it
//! (docs/protocol.md). [`Posted`] is one such table as it is built; [`find`] is the lookup
//! across them.

#![forbid(unsafe_code)]

mod batch;
mod commit;
mod find;
mod parts;
mod posted;
mod rank_sizes;
mod readback;

pub use batch::FenceBatch;

/// Table parts of posted data (format.md section 5, `part`: parts are u32 chosen by the
/// layers above the store; `rshm_gds::part` lists every layer's). Posted tables are put as
/// packable (`Transaction::put_table_packable`).
pub mod part {
    /// Data posted by the namespace's processes: fences, and commits once merged.
    pub const POSTED: u32 = 2;
    /// The RANK_UNDEF index of the namespace's posted keys ([`super::PostedParts`]).
    pub const POSTED_INDEX: u32 = 3;
    /// Part of rank 0's own posted table: rank `r`'s is `POSTED_RANKS + r` (`rank_part`),
    /// holding what `r` committed since its values were last merged into `POSTED`.
    pub const POSTED_RANKS: u32 = 16;
}

/// The withdrawal class of posted data: the bit of the anchor's `withdrawn` mask
/// (format.md section 4) that [`withdraw_for_good`] sets.
pub const WITHDRAWN_CLASS: u64 = 1;

/// Withdraw every posted value of the store for good (protocol step P6 with
/// [`WITHDRAWN_CLASS`]): readers stop answering posted data from it ([`find`] reports
/// `StoreRemoved` and its callers ask elsewhere), while job data stays readable. For when
/// posted data can be neither published nor withdrawn by a commit (the store directory
/// removed, a full filesystem): writes no file.
pub fn withdraw_for_good(writer: &mut crate::writer::Writer) -> crate::Result<()> {
    writer.withdraw(WITHDRAWN_CLASS)
}

/// Whether the store's posted data was withdrawn for good ([`withdraw_for_good`], R5).
pub fn withdrawn(reader: &crate::reader::Reader) -> bool {
    reader.withdrawn() & WITHDRAWN_CLASS != 0
}
pub use commit::Commit;
pub use find::find;
pub use parts::{PostedParts, SmallCommit, Staged};
pub use posted::Posted;

use crate::error::{Error, Result};
use crate::jobdata::query::RANK_VALID;
use crate::jobdata::TargetRank;
use crate::layout::Realm;
use crate::table::TableView;
use crate::valueref::ValueRef;

/// `pmix_scope_t` values a store holds (5.2.1.1). `PMIX_INTERNAL` (4) "is intended solely for
/// this process" and never reaches a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Scope {
    /// PMIX_LOCAL: "only available to processes on the local node".
    Local = 1,
    /// PMIX_REMOTE: "only available to processes on remote nodes".
    Remote = 2,
    /// PMIX_GLOBAL: "shared with all other requesting processes, regardless of location".
    Global = 3,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Global, Scope::Local, Scope::Remote];

    /// From a raw `pmix_scope_t`.
    pub fn from_raw(v: u8) -> Result<Scope> {
        match v {
            1 => Ok(Scope::Local),
            2 => Ok(Scope::Remote),
            3 => Ok(Scope::Global),
            4 => Err(Error::InvalidArgument(
                "PMIX_INTERNAL data never leaves its process".into(),
            )),
            v => Err(Error::InvalidArgument(format!("unknown scope {v}"))),
        }
    }

    /// Whether data of this scope is visible to a requester on the poster's node (`local`) or on
    /// another node.
    pub fn reaches(self, local: bool) -> bool {
        match self {
            Scope::Global => true,
            Scope::Local => local,
            Scope::Remote => !local,
        }
    }

    /// The scope of a posted entry's class (7..=9), if it is one.
    pub(crate) fn of_class(class: u16) -> Option<Scope> {
        Scope::from_raw(u8::try_from(class.checked_sub(6)?).ok()?).ok()
    }

    pub(crate) fn realm(self, rank: u32) -> Realm {
        Realm::Posted {
            rank,
            scope: self as u8,
        }
    }
}

/// Only a process posts data: special rank values (`PMIX_RANK_VALID` and above: WILDCARD,
/// UNDEF, LOCAL_NODE, ...) name sets of processes or none, never a poster.
pub(crate) fn check_poster(rank: u32) -> Result<()> {
    if rank >= RANK_VALID {
        return Err(Error::InvalidArgument(format!(
            "rank {rank:#x} is a special rank value, not a process that can post"
        )));
    }
    Ok(())
}

/// The table part of `rank`'s own posted table (`part::POSTED_RANKS` + rank); `None` for a
/// special rank value, which never posts.
pub fn rank_part(rank: u32) -> Option<u32> {
    if rank >= RANK_VALID {
        return None;
    }
    rank.checked_add(part::POSTED_RANKS)
}

/// Prefix of the RANK_UNDEF index: `rshm.undef:<key>` → the rank that posted the key.
const UNDEF_INDEX: &str = "rshm.undef:";

/// Entry classes of posted data (scopes LOCAL, REMOTE, GLOBAL): a put replaces its key in all.
const POSTED_CLASSES: std::ops::RangeInclusive<u16> = 7..=9;

/// The rank that posted `key`, for a `PMIX_RANK_UNDEF` lookup (5.3: globally unique keys), so
/// that the caller can tell whether that rank is local before calling [`get`].
pub fn undef_rank(t: &TableView, key: &str) -> Option<u32> {
    t.get(Realm::Meta, &format!("{UNDEF_INDEX}{key}"))?
        .as_u64()
        .and_then(|r| u32::try_from(r).ok())
}

/// PMIx_Get of a non-reserved key from one posted-data table ([`find`] looks across a
/// namespace's tables) (5.3 as far as a store decides it).
///
/// `local` tells whether the target process is on the requester's node (from the job data:
/// `jobdata::is_local`). Visible: GLOBAL, plus LOCAL data to local requesters and REMOTE data to
/// remote ones; `data_scope` (PMIX_DATA_SCOPE) narrows that to one scope. A key that exists only
/// in scopes the requester may not see is `ExistsOutsideScope`; an absent key is `NotFound`,
/// after which the server decides whether to wait, ask its host, or answer (PMIX_IMMEDIATE,
/// PMIX_OPTIONAL: 5.3 steps 2-3).
pub fn get<'t>(
    t: &'t TableView,
    rank: TargetRank,
    key: &str,
    local: bool,
    data_scope: Option<Scope>,
) -> Result<ValueRef<'t>> {
    let rank = match rank {
        TargetRank::Rank(r) => r,
        TargetRank::Undef => {
            let idx = t
                .get(Realm::Meta, &format!("{UNDEF_INDEX}{key}"))
                .ok_or(Error::NotFound)?;
            idx.as_u64()
                .and_then(|r| u32::try_from(r).ok())
                .ok_or(Error::Corrupt("undef index"))?
        }
        TargetRank::Wildcard => return Err(Error::NotFound),
    };
    let Some(kid) = t.key_id(key.as_bytes()) else {
        return Err(Error::NotFound);
    };
    let mut outside = false;
    for scope in Scope::ALL {
        let Some(v) = t.get_by_id(scope.realm(rank), kid) else {
            continue;
        };
        if scope.reaches(local) && data_scope.is_none_or(|s| s == scope) {
            return Ok(v);
        }
        outside = true;
    }
    Err(if outside {
        Error::ExistsOutsideScope
    } else {
        Error::NotFound
    })
}
