//! The environment a server hands its clients at setup_fork (`PMIx_server_setup_fork`), named
//! once for the server, the client, the preload and the component's C adapter (which reads the
//! same names through the generated `rshm_server.h`).

/// The store directory (`gds::Reader::attach_from_env` reads it).
pub const STORE: &str = gds::ENV_STORE;
/// The client's namespace and rank, when the server is not libpmix (which sets
/// `PMIX_NAMESPACE` / `PMIX_RANK`, read as a fallback).
pub const NSPACE: &str = "RSHM_NSPACE";
pub const RANK: &str = "RSHM_RANK";
