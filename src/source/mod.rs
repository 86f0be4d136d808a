//! Where snapshots come from other than the live API (src/connect): the API server's audit
//! log, and manifests in files. Each source produces the plain structs the pure analyses in
//! src/analyze take.

pub mod audit;
pub mod cluster_info;
pub mod dump;
pub mod files;
