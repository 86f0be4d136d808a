//! How many requests one run keeps in flight: one policy for every command, set by how the
//! server answers rather than by a constant per command.
//!
//! Over HTTP/2 every request shares one connection, so a request in flight costs the client
//! nothing but a stream; what limits a run is the server. Over a slow link the round trip is
//! the cost, and lists sent eight at a time paid it once per eight types (a cluster with 300
//! CRDs: 47 round trips where one would do). So the limit starts high, grows by one for each
//! answer that came back as fast as the server has been answering (so it doubles every round
//! trip, as TCP's slow start does), and halves when the server says it is overloaded: a 429
//! (API Priority and Fairness found no seat or queue room for the request) or a 503. Only
//! one halving per window: the requests rejected together were all sent before the first
//! cut, and cutting once for each would take the limit to the floor for one burst.
//!
//! The start is well inside what API Priority and Fairness gives one user in its default
//! configuration: a flow of the global-default priority level (any authenticated user) is
//! shuffle-sharded onto 6 of its 128 queues of 50 each, 300 requests, plus the seats it is
//! executing in. Over HTTP/1.1 each request in flight is a connection of its own, so there the
//! ceiling is what it was before this pace existed: eight.
//!
//! [`Pace`] counts and decides, and is pure; [`Gate`] makes the requests of a connection wait for it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// In flight at first.
pub const START: usize = 64;
/// Never fewer, however often the server throttles: retries wait out its Retry-After anyway.
pub const FLOOR: usize = 2;
/// At most, over HTTP/2: Go's HTTP/2 server (the API server's) allows 250 streams per
/// connection by default; more would queue in the client.
pub const HTTP2_CEILING: usize = 250;
/// At most, over HTTP/1.1: one connection per request in flight.
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
    /// Answered (any status but overload) after `latency`; `http1` when the answer came over
    /// HTTP/1.1 (an error status does not say, and counts as not).
    Answered { latency: Duration, http1: bool },
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
    limit: usize,
    ceiling: usize,
    in_flight: usize,
    /// Counts the halvings: a request sent before the latest one cannot cause another.
    window: u64,
    fastest: Option<Duration>,
}

impl Default for Pace {
    fn default() -> Pace {
        Pace::new(START)
    }
}

impl Pace {
    pub fn new(start: usize) -> Pace {
        Pace {
            limit: start.clamp(FLOOR, HTTP2_CEILING),
            ceiling: HTTP2_CEILING,
            in_flight: 0,
            window: 0,
            fastest: None,
        }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Room for how many more requests now.
    pub fn room(&self) -> usize {
        self.limit.saturating_sub(self.in_flight)
    }

    /// A ticket when there is room for one more request, None when it has to wait.
    pub fn start(&mut self) -> Option<Ticket> {
        (self.in_flight < self.limit).then(|| {
            self.in_flight += 1;
            Ticket { window: self.window }
        })
    }

    pub fn finish(&mut self, ticket: Ticket, outcome: Outcome) {
        self.in_flight = self.in_flight.saturating_sub(1);
        match outcome {
            Outcome::Answered { latency, http1 } => {
                if http1 {
                    self.ceiling = HTTP1_CEILING;
                }
                let fastest = *self.fastest.get_or_insert(latency);
                self.fastest = Some(fastest.min(latency));
                if latency <= fastest * SLOW {
                    self.limit += 1;
                }
            }
            Outcome::Overloaded if ticket.window == self.window => {
                self.limit /= 2;
                self.window += 1;
            }
            Outcome::Overloaded | Outcome::Lost => {}
        }
        self.limit = self.limit.clamp(FLOOR, self.ceiling);
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
    /// The server answered (over HTTP/1.1, or not known to be).
    pub fn answered(self, http1: bool) {
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
        Outcome::Answered { latency: RTT, http1: false }
    }

    /// Round trips to send `n` requests, each answered after one round trip, none throttled.
    fn round_trips(n: usize) -> usize {
        let mut pace = Pace::default();
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
        // 64, then 128, then the rest: 374 lists (300 CRDs) in three round trips, not 47.
        assert_eq!(round_trips(374), 3);
        // 64, 128, then 250 at a time (the ceiling): 192 + 7 x 250 = 1,942, so a tenth.
        assert_eq!(round_trips(2000), 10);
    }

    #[test]
    fn throttling_halves_once_per_window() {
        let mut pace = Pace::default();
        let tickets: Vec<Ticket> = std::iter::from_fn(|| pace.start()).collect();
        assert_eq!(tickets.len(), START);
        assert_eq!(pace.start(), None, "no room until one ends");
        // Ten rejected together: one cut, not ten.
        for &t in &tickets[..10] {
            pace.finish(t, Outcome::Overloaded);
        }
        assert_eq!(pace.limit(), START / 2);
        // A request sent after the cut and rejected too cuts again.
        for &t in &tickets[10..] {
            pace.finish(t, answered());
        }
        let late = pace.start().expect("room again");
        pace.finish(late, Outcome::Overloaded);
        assert_eq!(pace.limit(), (START / 2 + (START - 10)) / 2);
        // However often: never below the floor.
        for _ in 0..20 {
            let t = pace.start().expect("room");
            pace.finish(t, Outcome::Overloaded);
        }
        assert_eq!(pace.limit(), FLOOR);
    }

    #[test]
    fn http1_keeps_the_old_ceiling_and_slow_answers_do_not_grow() {
        let mut pace = Pace::default();
        let t = pace.start().unwrap();
        pace.finish(t, Outcome::Answered { latency: RTT, http1: true });
        assert_eq!(pace.limit(), HTTP1_CEILING);
        let mut pace = Pace::default();
        let t = pace.start().unwrap();
        pace.finish(t, answered());
        let t = pace.start().unwrap();
        pace.finish(t, Outcome::Answered { latency: RTT * (SLOW + 1), http1: false });
        assert_eq!(pace.limit(), START + 1, "only the fast answer grew it");
        let t = pace.start().unwrap();
        pace.finish(t, Outcome::Lost);
        assert_eq!(pace.limit(), START + 1);
    }

    #[tokio::test]
    async fn the_gate_holds_requests_past_the_limit_until_one_ends() {
        let gate = Gate::default();
        let mut passes = Vec::new();
        for _ in 0..START {
            passes.push(gate.enter().await);
        }
        let wait = Duration::from_millis(50);
        assert!(tokio::time::timeout(wait, gate.enter()).await.is_err(), "no room past the limit");
        // An answer ends one and grows the limit by one: room for two.
        passes.pop().unwrap().answered(false);
        let (a, b) = (gate.enter().await, gate.enter().await);
        assert!(tokio::time::timeout(wait, gate.enter()).await.is_err());
        // A pass dropped unanswered (a lost request) makes room without growing the limit.
        drop(a);
        let c = tokio::time::timeout(wait, gate.enter()).await.expect("room again");
        assert_eq!(gate.lock().in_flight(), START + 1);
        drop((b, c, passes));
        assert_eq!(gate.lock().in_flight(), 0);
    }

    proptest! {
        /// Whatever happens, the limit stays between the floor and the ceiling, and the count
        /// in flight is what was started and not finished.
        #[test]
        fn limit_and_count_stay_in_bounds(events in proptest::collection::vec((0u8..4, 1u64..2000, any::<bool>()), 0..400)) {
            let mut pace = Pace::default();
            let mut open = Vec::new();
            for (what, ms, http1) in events {
                match what {
                    0 => open.extend(pace.start()),
                    n => if let Some(t) = open.pop() {
                        let outcome = match n {
                            1 => Outcome::Answered { latency: Duration::from_millis(ms), http1 },
                            2 => Outcome::Overloaded,
                            _ => Outcome::Lost,
                        };
                        pace.finish(t, outcome);
                    },
                }
                prop_assert!((FLOOR..=HTTP2_CEILING).contains(&pace.limit()));
                prop_assert_eq!(pace.in_flight(), open.len());
            }
        }
    }
}
