//! Watch events put back in the order the server committed them. Each collection is its
//! own watch stream, so a ReplicaSet's creation can arrive before the Deployment update
//! that caused it (under load, by hundreds of milliseconds). Arrivals wait a short window
//! and leave sorted by resourceVersion (one etcd revision across resources), so a
//! reaction is never printed before its cause. Times stay arrival times, made
//! non-decreasing in the order released: a change that arrived before its cause gets the
//! cause's time, lag 0, never a negative lag.

use std::time::Duration;

use jiff::Timestamp;
use tokio::time::Instant;

pub struct Reorder<T> {
    window: Duration,
    waiting: Vec<Waiting<T>>,
    next_seq: u64,
    last_time: Option<Timestamp>,
}

struct Waiting<T> {
    /// None when the resourceVersion is not a number: released in arrival order.
    rv: Option<u64>,
    seq: u64,
    arrived: Instant,
    at: Timestamp,
    item: T,
}

impl<T> Reorder<T> {
    pub fn new(window: Duration) -> Reorder<T> {
        Reorder { window, waiting: Vec::new(), next_seq: 0, last_time: None }
    }

    pub fn push(&mut self, resource_version: &str, arrived: Instant, at: Timestamp, item: T) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.waiting.push(Waiting { rv: resource_version.parse().ok(), seq, arrived, at, item });
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// When the oldest arrival's window closes.
    pub fn next_due(&self) -> Option<Instant> {
        self.waiting.iter().map(|w| w.arrived + self.window).min()
    }

    /// The arrivals whose window has closed (all of them with `flush`), and any that
    /// arrived later with a smaller resourceVersion, in resourceVersion order.
    pub fn release(&mut self, now: Instant, flush: bool) -> Vec<(Timestamp, T)> {
        let due = |w: &Waiting<T>| flush || w.arrived + self.window <= now;
        let Some(bound) = self.waiting.iter().filter(|w| due(w)).map(|w| w.rv.unwrap_or(u64::MAX)).max() else {
            return Vec::new();
        };
        let (mut out, keep): (Vec<Waiting<T>>, Vec<Waiting<T>>) =
            std::mem::take(&mut self.waiting).into_iter().partition(|w| due(w) || w.rv.is_some_and(|rv| rv < bound));
        self.waiting = keep;
        out.sort_by_key(|w| (w.rv.unwrap_or(u64::MAX), w.seq));
        out.into_iter()
            .map(|w| {
                let at = self.last_time.map_or(w.at, |last| last.max(w.at));
                self.last_time = Some(at);
                (at, w.item)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_millisecond(1_700_000_000_000 + ms).unwrap()
    }

    #[test]
    fn a_child_that_arrives_first_leaves_after_its_cause() {
        let start = Instant::now();
        let mut r = Reorder::new(Duration::from_millis(300));
        r.push("120", start, t(0), "replicaset created");
        r.push("110", start + Duration::from_millis(50), t(50), "deployment spec");
        assert!(r.release(start + Duration::from_millis(100), false).is_empty(), "still inside the window");
        assert_eq!(r.next_due(), Some(start + Duration::from_millis(300)));
        let out = r.release(start + Duration::from_millis(300), false);
        // The deployment's update arrived later but committed first: it leaves first,
        // although its own window is still open, and the child gets its time (lag 0).
        assert_eq!(out, vec![(t(50), "deployment spec"), (t(50), "replicaset created")]);
        assert!(r.is_empty());
    }

    #[test]
    fn later_arrivals_wait_their_window_and_flush_takes_all() {
        let start = Instant::now();
        let mut r = Reorder::new(Duration::from_millis(300));
        r.push("5", start, t(0), "a");
        r.push("9", start + Duration::from_millis(200), t(200), "b");
        r.push("not-a-number", start + Duration::from_millis(250), t(250), "c");
        assert_eq!(r.release(start + Duration::from_millis(300), false), vec![(t(0), "a")]);
        assert_eq!(r.release(start + Duration::from_millis(310), true), vec![(t(200), "b"), (t(250), "c")]);
        assert!(r.release(start + Duration::from_secs(9), true).is_empty());
    }
}
