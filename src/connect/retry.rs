//! When a failed request is sent again, and after how long. Pure: the caller brings the
//! failure, what the server said about waiting, and the dice.
//!
//! Throttling (429, API Priority and Fairness rejecting a request its priority level has no
//! seat or queue for) is the server answering "later", never "no": a run that gives up on it
//! reports less than is there. So a throttled request is retried as client-go retries it (up
//! to 10 times, after the `Retry-After` the server sends) and kube-rs does (exponential
//! backoff), with jitter so that the requests rejected together do not all come back in the
//! same instant and meet the same full seat. Its waits are bounded by their own budget, not
//! by --request-timeout, which (as in kubectl) bounds one attempt: a throttled server answers.
//!
//! A failing server (5xx) or a connection closed before the request was sent are retried
//! briefly, only while the first attempt's --request-timeout has not run out: an etcd leader
//! change or an API server restart passes in that time, a broken server does not.

use std::time::Duration;

/// Retries of a throttled request, on top of the first attempt (client-go's maxRetries).
pub const THROTTLE_RETRIES: u32 = 10;
/// The most a throttled request waits in all before its 429 is final.
pub const THROTTLE_BUDGET: Duration = Duration::from_secs(60);
/// The longest single wait, whatever Retry-After says.
const LONGEST_WAIT: Duration = Duration::from_secs(10);
/// Retries of a 5xx answer or an unsent request.
pub const FAILURE_RETRIES: u32 = 3;

/// Why an attempt failed, as far as retrying goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// 429 Too Many Requests.
    Throttled,
    /// 500, 502, 503, 504: server-side failures that often pass.
    ServerFailure,
    /// Lost unsent to a connection the server closed gracefully.
    Unsent,
    /// Anything else: a refusal (4xx), a timeout, a transport failure. Not retried.
    Final,
}

pub fn cause(code: Option<u16>, unsent: bool) -> Cause {
    match code {
        Some(429) => Cause::Throttled,
        Some(500 | 502 | 503 | 504) => Cause::ServerFailure,
        _ if unsent => Cause::Unsent,
        _ => Cause::Final,
    }
}

/// What has happened to one request so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct Attempts {
    /// Retries already made.
    pub retries: u32,
    /// Time waited between attempts.
    pub waited: Duration,
    /// Time since the first attempt started.
    pub elapsed: Duration,
}

/// The wait before the next attempt, or None to give up. `retry_after` is the server's
/// Retry-After; `jitter` a number in [0, 1).
pub fn next_wait(
    cause: Cause,
    retry_after: Option<Duration>,
    so_far: Attempts,
    request_timeout: Option<Duration>,
    jitter: f64,
) -> Option<Duration> {
    let base = retry_after.unwrap_or_else(|| backoff(so_far.retries)).min(LONGEST_WAIT);
    match cause {
        Cause::Throttled => {
            // Between the base and twice it: spread, never sooner than the server asked.
            let wait = base.mul_f64(1.0 + jitter.clamp(0.0, 1.0));
            (so_far.retries < THROTTLE_RETRIES && so_far.waited + wait <= THROTTLE_BUDGET).then_some(wait)
        }
        Cause::ServerFailure | Cause::Unsent => {
            let wait = base.mul_f64(1.0 + jitter.clamp(0.0, 1.0) / 4.0);
            let in_time = request_timeout.is_none_or(|limit| so_far.elapsed + wait < limit);
            (so_far.retries < FAILURE_RETRIES && in_time).then_some(wait)
        }
        Cause::Final => None,
    }
}

/// 250 ms, 500 ms, 1 s, 2 s, 4 s, then 8 s.
fn backoff(retry: u32) -> Duration {
    Duration::from_millis(250 << retry.min(5))
}

/// A Retry-After header: whole seconds (the API server never sends an HTTP date).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(retries: u32, waited_ms: u64) -> Attempts {
        Attempts { retries, waited: Duration::from_millis(waited_ms), elapsed: Duration::from_millis(waited_ms) }
    }

    #[test]
    fn only_overload_and_server_failures_are_retried() {
        assert_eq!(cause(Some(429), false), Cause::Throttled);
        for code in [500, 502, 503, 504] {
            assert_eq!(cause(Some(code), false), Cause::ServerFailure, "{code}");
        }
        for code in [400, 401, 403, 404, 405, 406, 409, 410, 422, 501] {
            assert_eq!(cause(Some(code), false), Cause::Final, "{code}");
            assert_eq!(next_wait(cause(Some(code), false), None, after(0, 0), None, 0.5), None);
        }
        assert_eq!(cause(None, true), Cause::Unsent);
        assert_eq!(cause(None, false), Cause::Final);
    }

    #[test]
    fn a_throttled_request_waits_as_the_server_asks_spread_by_jitter() {
        let one = Some(Duration::from_secs(1));
        assert_eq!(next_wait(Cause::Throttled, one, after(0, 0), None, 0.0), Some(Duration::from_secs(1)));
        assert_eq!(next_wait(Cause::Throttled, one, after(0, 0), None, 0.5), Some(Duration::from_millis(1500)));
        // Without Retry-After: exponential backoff.
        assert_eq!(next_wait(Cause::Throttled, None, after(2, 750), None, 0.0), Some(Duration::from_secs(1)));
        // A huge Retry-After is capped.
        let long = Some(Duration::from_secs(3600));
        assert_eq!(next_wait(Cause::Throttled, long, after(0, 0), None, 0.0), Some(LONGEST_WAIT));
        // --request-timeout bounds an attempt, not the waits of a throttled request.
        let timeout = Some(Duration::from_secs(2));
        assert!(next_wait(Cause::Throttled, one, after(3, 5000), timeout, 0.9).is_some());
    }

    #[test]
    fn the_throttle_budget_ends_in_attempts_or_time() {
        let one = Some(Duration::from_secs(1));
        // Ten retries, then the 429 stands.
        let mut so_far = Attempts::default();
        while let Some(wait) = next_wait(Cause::Throttled, one, so_far, None, 0.99) {
            so_far.retries += 1;
            so_far.waited += wait;
        }
        assert_eq!(so_far.retries, THROTTLE_RETRIES);
        assert!(so_far.waited <= THROTTLE_BUDGET);
        // A server that asks for long waits runs the time budget out first.
        let long = Some(Duration::from_secs(9));
        let mut so_far = Attempts::default();
        while let Some(wait) = next_wait(Cause::Throttled, long, so_far, None, 0.99) {
            so_far.retries += 1;
            so_far.waited += wait;
        }
        assert!(so_far.retries < THROTTLE_RETRIES && so_far.waited <= THROTTLE_BUDGET, "{so_far:?}");
    }

    #[test]
    fn failures_are_retried_briefly_within_the_request_timeout() {
        let mut so_far = Attempts::default();
        let mut waits = Vec::new();
        while let Some(wait) = next_wait(Cause::ServerFailure, None, so_far, None, 0.0) {
            so_far.retries += 1;
            waits.push(wait);
        }
        let ms = |m| Duration::from_millis(m);
        assert_eq!(waits, [ms(250), ms(500), ms(1000)]);
        // Past the request timeout, no retry.
        let timeout = Some(Duration::from_secs(3));
        let late = Attempts { retries: 1, waited: ms(250), elapsed: ms(2900) };
        assert_eq!(next_wait(Cause::Unsent, None, late, timeout, 0.0), None);
        assert_eq!(next_wait(Cause::ServerFailure, None, late, None, 0.0), Some(ms(500)));
    }

    #[test]
    fn retry_after_is_whole_seconds() {
        assert_eq!(parse_retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }
}
