//! The keys job data stores as proc columns (format.md section 6, "Proc columns"): a rank's
//! value of key `COLUMN_KEYS[c]` goes to column `c` (of kind `layout::COLUMN_KINDS[c]`) when
//! it fits, and a lookup of that key reads the column.

use crate::layout::{ColumnKind, COLUMN_KINDS};

/// The key of each proc column, in column order.
pub const COLUMN_KEYS: [&str; COLUMN_KINDS.len()] = [
    "pmix.lrank",
    "pmix.nrank",
    "pmix.nodeid",
    "pmix.appnum",
    "pmix.apprank",
    "pmix.grank",
];

/// The column of PMIX_NODEID: a rank's node, which node-realm answers for a rank (its
/// hostname, above all) start from.
pub const NODEID_COLUMN: usize = 2;
const _: () = {
    let (a, b) = (COLUMN_KEYS[NODEID_COLUMN].as_bytes(), b"pmix.nodeid");
    assert!(a.len() == b.len());
    let mut i = 0;
    while i < a.len() {
        assert!(a[i] == b[i]);
        i += 1;
    }
    assert!(matches!(COLUMN_KINDS[NODEID_COLUMN], ColumnKind::Uint32));
};
