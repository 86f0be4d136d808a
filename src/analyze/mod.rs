//! Pure analysis over snapshots: no I/O, no printing.

pub mod fields;
pub mod fieldsv1;
pub mod lease;
pub mod lease_report;
pub mod lease_watch;
pub mod overlap;
pub mod resource_ref;
pub mod selector;
