//! Where snapshots come from other than the live API (src/connect): the API server's audit
//! log, manifests in files, and dumps (coord's own, `kubectl cluster-info dump`, support
//! bundles). Each source produces the plain structs the pure analyses in
//! src/analyze take.

pub mod any_dump;
pub mod audit;
pub mod cluster_info;
pub mod dump;
pub mod files;
mod lists;
pub mod support_bundle;
