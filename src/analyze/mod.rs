//! Pure analysis over snapshots: no I/O, no printing.

pub mod adoption;
pub mod apply_takes;
pub mod blame;
pub mod cascade;
pub mod check;
pub mod chunked;
pub mod codes;
pub mod field_watch;
pub mod fields;
/// FieldsV1, managedFields' path format: decoded where an object is read (src/snapshot).
pub use crate::snapshot::fieldsv1;
pub mod history;
pub mod intern;
pub mod lease;
pub mod lease_report;
pub mod lease_watch;
pub mod object_status;
pub mod overlap;
pub mod owner_graph;
pub mod reaction;
pub mod resource_ref;
pub mod selector;
pub mod sequence;
pub mod sequence_text;
pub mod silence;
pub mod stall;
pub mod uid;
