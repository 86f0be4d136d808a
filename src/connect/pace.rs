//! How many requests one run keeps in flight: one policy for every command, set by how the
//! server answers rather than by a constant per command.
//!
//! Over HTTP/2 every request shares one connection, so a request in flight costs the client
//! nothing but a stream; what limits a run is the server. Over a slow link the round trip is
//! the cost, and lists sent eight at a time paid it once per eight types (a cluster with 300
//! CRDs: 47 round trips where two do). So once the first answer has shown the connection is
//! HTTP/2, the limit is the ceiling, 250 streams; it halves when the server says it is
//! overloaded (a 429: API Priority and Fairness found no seat or queue room for the request;
//! or a 503), and grows back by one for each answer that came back as fast as the server has
//! been answering, so it doubles every round trip, as TCP's slow start does. Only one halving
//! per window: the requests rejected together were all sent before the first cut, and
//! cutting once for each would take the limit to the floor for one burst.
//!
//! The ceiling is well inside what API Priority and Fairness gives one user in its default
//! configuration: a flow of the global-default priority level (any authenticated user) is
//! shuffle-sharded onto 6 of its 128 queues of 50 each, 300 requests, plus the seats it is
//! executing in. Starting lower (64, doubling) cost a 300-CRD cluster a third round trip of
//! lists over a 40 ms link. Until an answer says which protocol the connection speaks (the
//! first is discovery's), and over HTTP/1.1, where each request in flight is a connection
//! of its own, the ceiling is what it was before this pace existed: eight.
//!
//! [`Pace`] counts and decides, and is pure; [`Gate`] makes the requests of a connection wait for it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Never fewer, however often the server throttles: retries wait out its Retry-After anyway.
pub const FLOOR: usize = 2;
/// At most, over HTTP/2: Go's HTTP/2 server (the API server's) allows 250 streams per
/// connection by default; more would queue in the client.
pub const HTTP2_CEILING: usize = 250;
/// At most, over HTTP/1.1 or before the protocol is known: one connection per request in flight.
pub const HTTP1_CEILING: usize = 8;
/// How many requests a command hands the gate at once: as many as could ever be in flight.
/// The gate, not the command, decides how many go.
pub const FAN_OUT: usize = HTTP2_CEILING;
/// An answer slower than this many times the fastest so far does not grow the limit: the
/// server is queueing, or the answer was large (a big page is slow for its bytes, not for
/// its seat). Either way more requests at once would not make it faster.
const SLOW: u32 = 10;

/// How a request ended, as far as the pace goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Answered (any status but overload) after `latency`; `http1` says whether the answer
    /// came over HTTP/1.1, None when it does not say (an error status).
    Answered { latency: Duration, http1: Option<bool> },
    /// 429, or 503: the server asks for fewer requests.
    Overloaded,
    /// No answer (timeout, transport failure, cancelled): says nothing about the server's load.
    Lost,
}

/// One request let through: which window it was sent in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    window: u64,
}

#[derive(Debug, Clone)]
pub struct Pace {
    /// The limit over HTTP/2; [`Pace::limit`] caps it by the protocol.
    limit: usize,
    /// Some(true) once an answer came over HTTP/1.1, Some(false) once one came over HTTP/2
    /// (and none over HTTP/1.1), None before either.
    http1: Option<bool>,
    in_flight: usize,
    /// Counts the halvings: a request sent before the latest one cannot cause another.
    window: u64,
    fastest: Option<Duration>,
}

impl Default for Pace {
    fn default() -> Pace {
        Pace { limit: HTTP2_CEILING, http1: None, in_flight: 0, window: 0, fastest: None }
    }
}

impl Pace {
    /// How many may be in flight now.
    pub fn limit(&self) -> usize {
        match self.http1 {
            Some(false) => self.limit,
            _ => self.limit.min(HTTP1_CEILING),
        }
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Room for how many more requests now.
    pub fn room(&self) -> usize {
        self.limit().saturating_sub(self.in_flight)
    }

    /// A ticket when there is room for one more request, None when it has to wait.
    pub fn start(&mut self) -> Option<Ticket> {
        (self.in_flight < self.limit()).then(|| {
            self.in_flight += 1;
            Ticket { window: self.window }
        })
    }

    pub fn finish(&mut self, ticket: Ticket, outcome: Outcome) {
        self.in_flight = self.in_flight.saturating_sub(1);
        match outcome {
            Outcome::Answered { latency, http1 } => {
                // HTTP/1.1 once is HTTP/1.1 for good: a later connection will be too.
                match http1 {
                    Some(true) => self.http1 = Some(true),
                    Some(false) => self.http1 = self.http1.or(Some(false)),
                    None => {}
                }
                let fastest = *self.fastest.get_or_insert(latency);
                self.fastest = Some(fastest.min(latency));
                if latency <= fastest * SLOW {
                    self.limit += 1;
                }
            }
            Outcome::Overloaded if ticket.window == self.window => {
                self.limit = self.limit() / 2;
                self.window += 1;
            }
            Outcome::Overloaded | Outcome::Lost => {}
        }
        self.limit = self.limit.clamp(FLOOR, HTTP2_CEILING);
    }
}

/// A [`Pace`] shared by every clone of a connection, and the requests waiting for room.
#[derive(Default)]
pub struct Gate {
    pace: Mutex<Pace>,
    room: Notify,
}

/// Room for one request; say how it ended with [`Pass::answered`] or [`Pass::overloaded`]
/// (dropped unsaid: lost).
pub struct Pass<'a> {
    gate: &'a Gate,
    ticket: Option<Ticket>,
    started: Instant,
}

impl Gate {
    /// Waits until the pace has room for one more request.
    pub async fn enter(&self) -> Pass<'_> {
        loop {
            // Registered before looking, so room made between the look and the wait is not missed.
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(ticket) = self.lock().start() {
                return Pass { gate: self, ticket: Some(ticket), started: Instant::now() };
            }
            notified.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pace> {
        // The pace is counts only; a panic elsewhere cannot leave it half-updated.
        self.pace.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn finish(&self, ticket: Ticket, outcome: Outcome) {
        let room = {
            let mut pace = self.lock();
            pace.finish(ticket, outcome);
            pace.room()
        };
        for _ in 0..room {
            self.room.notify_one();
        }
    }
}

impl Pass<'_> {
    /// The server answered: over HTTP/1.1 (Some(true)), HTTP/2 (Some(false)), or not said.
    pub fn answered(self, http1: Option<bool>) {
        let latency = self.started.elapsed();
        self.end(Outcome::Answered { latency, http1 });
    }

    /// The server refused the request as overload (429, 503).
    pub fn overloaded(self) {
        self.end(Outcome::Overloaded);
    }

    fn end(mut self, outcome: Outcome) {
        if let Some(t) = self.ticket.take() {
            self.gate.finish(t, outcome);
        }
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.ticket.take() {
            self.gate.finish(t, Outcome::Lost);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const RTT: Duration = Duration::from_millis(40);

    fn answered() -> Outcome {
        Outcome::Answered { latency: RTT, http1: Some(false) }
    }

    /// A pace whose first answer (discovery) came over HTTP/2.
    fn over_http2() -> Pace {
        let mut pace = Pace::default();
        let t = pace.start().unwrap();
        pace.finish(t, answered());
        pace
    }

    /// Round trips to send `n` requests after discovery, each answered after one round trip,
    /// none throttled.
    fn round_trips(n: usize) -> usize {
        let mut pace = over_http2();
        let (mut left, mut trips) = (n, 0);
        while left > 0 {
            let mut sent = Vec::new();
            while left > 0
                && let Some(t) = pace.start()
            {
                sent.push(t);
                left -= 1;
            }
            for t in sent {
                pace.finish(t, answered());
            }
            trips += 1;
        }
        trips
    }

    #[test]
    fn a_server_that_keeps_up_gets_everything_in_a_few_round_trips() {
        assert_eq!(round_trips(60), 1, "a cluster's usual types at once");
        // 250, then the rest: 391 requests (300 CRDs) in two round trips, not 47.
        assert_eq!(round_trips(391), 2);
        assert_eq!(round_trips(2000), 8);
    }

    #[test]
    fn before_the_protocol_is_known_and_over_http1_eight_at_a_time() {
        let mut pace = Pace::default();
        let first: Vec<Ticket> = std::iter::from_fn(|| pace.start()).collect();
        assert_eq!(first.len(), HTTP1_CEILING, "not yet known");
        // An error status does not say which protocol carried it.
        pace.finish(first[0], Outcome::Answered { latency: RTT, http1: None });
        assert_eq!(pace.limit(), HTTP1_CEILING);
        pace.finish(first[1], answered());
        assert_eq!(pace.limit(), HTTP2_CEILING, "HTTP/2: the ceiling");
        // HTTP/1.1 once (a second connection): eight from then on, whatever answers later.
        pace.finish(first[2], Outcome::Answered { latency: RTT, http1: Some(true) });
        pace.finish(first[3], answered());
        assert_eq!(pace.limit(), HTTP1_CEILING);
    }

    #[test]
    fn throttling_halves_once_per_window() {
        let mut pace = over_http2();
        let tickets: Vec<Ticket> = std::iter::from_fn(|| pace.start()).collect();
        assert_eq!(tickets.len(), HTTP2_CEILING);
        assert_eq!(pace.start(), None, "no room until one ends");
        // Ten rejected together: one cut, not ten.
        for &t in &tickets[..10] {
            pace.finish(t, Outcome::Overloaded);
        }
        let half = HTTP2_CEILING / 2;
        assert_eq!(pace.limit(), half);
        // Fast answers grow it back by one each, up to the ceiling.
        for &t in &tickets[10..20] {
            pace.finish(t, answered());
        }
        assert_eq!(pace.limit(), half + 10);
        for &t in &tickets[20..] {
            pace.finish(t, answered());
        }
        assert_eq!(pace.limit(), HTTP2_CEILING);
        // A request sent after the cut and rejected too cuts again.
        let late = pace.start().expect("room again");
        pace.finish(late, Outcome::Overloaded);
        assert_eq!(pace.limit(), half);
        // However often: never below the floor.
        for _ in 0..20 {
            let t = pace.start().expect("room");
            pace.finish(t, Outcome::Overloaded);
        }
        assert_eq!(pace.limit(), FLOOR);
    }

    #[test]
    fn slow_and_lost_answers_do_not_grow_the_limit() {
        let mut pace = over_http2();
        let t = pace.start().unwrap();
        pace.finish(t, Outcome::Overloaded);
        let half = HTTP2_CEILING / 2;
        let t = pace.start().unwrap();
        pace.finish(t, answered());
        let t = pace.start().unwrap();
        pace.finish(t, Outcome::Answered { latency: RTT * (SLOW + 1), http1: Some(false) });
        assert_eq!(pace.limit(), half + 1, "only the fast answer grew it");
        let t = pace.start().unwrap();
        pace.finish(t, Outcome::Lost);
        assert_eq!(pace.limit(), half + 1);
    }

    #[tokio::test]
    async fn the_gate_holds_requests_past_the_limit_until_one_ends() {
        let gate = Gate::default();
        gate.enter().await.answered(Some(false));
        let mut passes = Vec::new();
        for _ in 0..HTTP2_CEILING {
            passes.push(gate.enter().await);
        }
        let wait = Duration::from_millis(50);
        assert!(tokio::time::timeout(wait, gate.enter()).await.is_err(), "no room past the limit");
        // An answer ends one: room for one (the limit is at the ceiling already).
        passes.pop().unwrap().answered(Some(false));
        let a = gate.enter().await;
        assert!(tokio::time::timeout(wait, gate.enter()).await.is_err());
        // A pass dropped unanswered (a lost request) makes room too.
        drop(a);
        let b = tokio::time::timeout(wait, gate.enter()).await.expect("room again");
        assert_eq!(gate.lock().in_flight(), HTTP2_CEILING);
        drop((b, passes));
        assert_eq!(gate.lock().in_flight(), 0);
    }

    proptest! {
        /// Whatever happens, the limit stays between the floor and the ceiling, and the count
        /// in flight is what was started and not finished.
        #[test]
        fn limit_and_count_stay_in_bounds(events in proptest::collection::vec((0u8..4, 1u64..2000, 0u8..3), 0..400)) {
            let mut pace = Pace::default();
            let mut open = Vec::new();
            for (what, ms, protocol) in events {
                match what {
                    0 => open.extend(pace.start()),
                    n => if let Some(t) = open.pop() {
                        let http1 = [None, Some(false), Some(true)][protocol as usize];
                        let outcome = match n {
                            1 => Outcome::Answered { latency: Duration::from_millis(ms), http1 },
                            2 => Outcome::Overloaded,
                            _ => Outcome::Lost,
                        };
                        pace.finish(t, outcome);
                    },
                }
                prop_assert!((FLOOR..=HTTP2_CEILING).contains(&pace.limit()));
                prop_assert!(pace.http1 == Some(false) || pace.limit() <= HTTP1_CEILING);
                prop_assert_eq!(pace.in_flight(), open.len());
            }
        }
    }
}
