//! PMIx job data: what a server hands the store at `PMIx_server_register_nspace`, laid out so that
//! a client's PMIx_Get of a reserved key is a lookup (standard ch. 6, 17.2.3). See docs/jobdata.md.

#![forbid(unsafe_code)]

pub mod anlmap;
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
pub use policy::{decide, decide_in, Decision, Directives, Pass};
pub use query::{Qualifiers, TargetRank};
pub use register::{build, Ahead, JobSummary, RegInfo};
pub use resolve::{get, get_by_rules_only, is_local};
pub use resources::Resources;
