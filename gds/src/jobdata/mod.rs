//! PMIx job data: what a server hands the store at `PMIx_server_register_nspace`, laid out so that
//! a client's PMIx_Get of a reserved key is a lookup (standard ch. 6, 17.2.3). See docs/jobdata.md.

#![forbid(unsafe_code)]

pub mod anlmap;
pub mod columns;
mod facts;
pub mod keys;
pub mod maps;
mod node_ids;
pub mod node_names;
pub mod policy;
pub mod query;
pub mod register;
pub mod resolve;
pub mod resources;
pub mod synthetic;

pub use facts::JobMeta;

/// Table parts of job data (format.md section 5, `part`: parts are u32 chosen by the layers
/// above the store; `rshm_gds::part` lists every layer's).
pub mod part {
    /// The namespace's data table.
    pub const DATA: u32 = 0;
    /// Resources not tied to a namespace ([`super::resources`]), under its own store name.
    pub const RESOURCES: u32 = 1;
    /// NUMA replicas of the namespace's data table: domain `d`'s is `DATA_REPLICAS + d`, for
    /// `d` below 8 (`rshm_topo::numa`), byte-equal to part DATA, its pages on that domain.
    pub const DATA_REPLICAS: u32 = 8;
}
pub use policy::{decide, decide_in, Decision, Directives, Pass};
pub use query::{Qualifiers, TargetRank};
pub use register::{build, Ahead, JobSummary, RegInfo};
pub use resolve::{get, get_by_rules_only, is_local};
pub use resources::Resources;
