//! History from the API server's audit log: who wrote what and when. The source layer
//! (src/source/audit) turns the log's events into [`Request`]s (src/snapshot/audit.rs), in
//! time order; this module and
//! its children are pure functions and accumulators over them: one object's timeline
//! ([`timeline`]) and the findings over a window ([`findings`]): fights, conflicts, hot loops,
//! leadership and reaction lags.
//!
//! What the log can say depends on its level. Metadata: who, when, which object and
//! subresource, the verb and the answer's code, and for create and update the resourceVersion
//! sent. Request adds the body sent (here only its field paths and a hash of each value: no
//! value leaves the log). RequestResponse adds the object as stored: its new resourceVersion
//! and the writer's managedFields entry.

pub mod findings;
pub mod hops;
pub mod timeline;
pub mod verdicts;

pub use crate::snapshot::audit::*;
