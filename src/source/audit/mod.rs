//! The API server's audit log as a source: [`read`] streams every input (files, directories,
//! gzip, stdin), parses blocks of lines on every core, and hands the wanted requests to a sink
//! in time order across inputs (several API servers write several logs), each request once
//! (its last stage, and once however many inputs carry it). Memory stays flat: each input has
//! a few blocks in flight, and a line over 10 MB is skipped, never held.
//!
//! What cannot be read is counted, not fatal: a line that is not JSON (API servers have
//! written invalid JSON for YAML apply bodies), a line over the limit, a last line cut short
//! (a log still being written), a gzip stream that ends early. Only an input that holds no
//! audit event at all is an error, and only when no input does.

pub mod body;
pub mod event;
pub mod input;
mod merge;

use std::path::PathBuf;

use crate::snapshot::audit::{Micros, Request};
pub use event::Want;
use input::Source;

/// What the inputs held and what could not be read.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub inputs: Vec<String>,
    /// Inputs in a directory that hold no audit event, skipped.
    pub not_audit: Vec<String>,
    pub bytes: u64,
    pub counts: event::Counts,
    /// The same request in more than one input (or twice in one), counted once.
    pub duplicates: u64,
    pub skipped: Skips,
    /// The first and last stageTimestamp of any event read (kept or not).
    pub first: Option<Micros>,
    pub last: Option<Micros>,
}

/// Lines that could not be read, by why, with where the first of each was.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skips {
    pub not_json: Skip,
    pub too_long: Skip,
    pub cut_short: Skip,
    pub unreadable: Skip,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skip {
    pub count: u64,
    /// "audit.log:1234", or the input and what its reader said.
    pub first: Option<String>,
}

impl Skip {
    fn add(&mut self, at: impl FnOnce() -> String) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(at());
        }
    }

    fn merge(&mut self, other: &Skip) {
        self.count += other.count;
        if self.first.is_none() {
            self.first.clone_from(&other.first);
        }
    }
}

impl Skips {
    pub fn total(&self) -> u64 {
        self.not_json.count + self.too_long.count + self.cut_short.count + self.unreadable.count
    }

    fn merge(&mut self, other: &Skips) {
        self.not_json.merge(&other.not_json);
        self.too_long.merge(&other.too_long);
        self.cut_short.merge(&other.cut_short);
        self.unreadable.merge(&other.unreadable);
    }

    /// One line for stderr: "skipped 3 lines of the audit log: 1 not JSON (first at
    /// audit.log:12), 2 over 10 MB (first at audit.log:40)". None when nothing was skipped.
    pub fn line(&self) -> Option<String> {
        let parts: Vec<String> = [
            (&self.not_json, "not JSON"),
            (&self.too_long, "over 10 MB"),
            (&self.cut_short, "cut short at the end (a log still being written?)"),
            (&self.unreadable, "unreadable"),
        ]
        .into_iter()
        .filter(|(s, _)| s.count > 0)
        .map(|(s, why)| format!("{} {why} (first at {})", s.count, s.first.as_deref().unwrap_or("?")))
        .collect();
        (!parts.is_empty()).then(|| {
            let total = self.total();
            format!(
                "skipped {total} {} of the audit log: {}",
                if total == 1 { "line" } else { "lines" },
                parts.join(", ")
            )
        })
    }
}

/// Reads every input named by `paths`, handing the wanted requests to `sink` in time order.
/// Errors (exit 2, one line): an input that cannot be opened, or no input that holds an audit
/// event.
pub fn read(paths: &[PathBuf], want: &Want, sink: impl FnMut(Request)) -> Result<Summary, String> {
    let sources = input::expand(paths)?;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8);
    merge::run(sources, want, threads, sink)
}

/// The inputs' names, for the reports.
pub fn names(sources: &[Source]) -> Vec<String> {
    sources.iter().map(Source::name).collect()
}
