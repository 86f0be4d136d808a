//! Pure analysis over snapshots: no I/O, no printing.

pub mod lease;
pub mod lease_report;
pub mod lease_watch;
pub mod overlap;
pub mod selector;
