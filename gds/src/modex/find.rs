//! PMIx_Get of a posted key across the tables a namespace's posted data is published in.

#![forbid(unsafe_code)]

use std::sync::Arc;

use super::part;
use super::{get, rank_part, undef_rank, Scope};
use crate::error::{Error, Result};
use crate::jobdata::TargetRank;
use crate::reader::{Pin, Reader};
use crate::table::TableView;
use crate::valueref::ValueRef;

/// PMIx_Get of a non-reserved key from namespace `ns`'s posted data (5.3 as far as a store
/// decides it, see [`get`]): the target rank's own table answers for every key it holds, in
/// any scope; the base table for the others. `PMIX_RANK_UNDEF` is first resolved to the key's
/// poster by the index table (or, for a namespace published as one table, by that table's own
/// index). `StoreRemoved` once the writer withdrew the store's posted data for good
/// ([`super::withdraw_for_good`]). `local(rank)` tells whether a rank is on the requester's
/// node. Returns the value and the table that holds it.
pub fn find<'p>(
    reader: &'p Reader,
    pin: &'p Pin<'_>,
    ns: &str,
    target: TargetRank,
    key: &str,
    local: impl Fn(u32) -> bool,
    data_scope: Option<Scope>,
) -> Result<(ValueRef<'p>, &'p Arc<TableView>)> {
    // Posted data the writer could no longer publish nor withdraw (R5): none is answered.
    if super::withdrawn(reader) {
        return Err(Error::StoreRemoved);
    }
    let rank = match target {
        TargetRank::Rank(r) => r,
        TargetRank::Wildcard => return Err(Error::NotFound),
        TargetRank::Undef => {
            let index = match reader.table(pin, ns, part::POSTED_INDEX) {
                Err(Error::NotFound) => reader.table(pin, ns, part::POSTED)?,
                other => other?,
            };
            undef_rank(index, key).ok_or(Error::NotFound)?
        }
    };
    let near = local(rank);
    if let Some(p) = rank_part(rank) {
        match reader.table_arc(pin, ns, p) {
            Ok(t) => match get(t, TargetRank::Rank(rank), key, near, data_scope) {
                Err(Error::NotFound) => {}
                found => return found.map(|v| (v, t)),
            },
            Err(Error::NotFound) => {}
            Err(e) => return Err(e),
        }
    }
    let base = reader.table_arc(pin, ns, part::POSTED)?;
    get(base, TargetRank::Rank(rank), key, near, data_scope).map(|v| (v, base))
}
