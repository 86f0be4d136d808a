//! kubectl's `--request-timeout` syntax (client-go `ParseTimeout`): a plain
//! non-negative integer is seconds; otherwise Go's `time.ParseDuration` grammar
//! (`1h30m`, `2.5s`, `300ms`). Zero means no timeout. Negative values are refused.

use std::time::Duration;

pub const TIMEOUT_HINT: &str =
    "a whole number of seconds, or numbers with units ns, us, ms, s, m, h (e.g. 30s, 1m, 1h30m); 0 means no timeout";

/// Parses --request-timeout; `Ok(None)` means "no timeout".
pub fn parse_timeout(text: &str) -> Result<Option<Duration>, String> {
    parse_limit("--request-timeout", text)
}

/// A time limit flag in the --request-timeout grammar (--watch-timeout): 0 means none.
pub fn parse_limit(flag: &str, text: &str) -> Result<Option<Duration>, String> {
    let text = text.trim();
    let d = to_duration(text).ok_or_else(|| format!("invalid {flag} {text:?}: expected {TIMEOUT_HINT}"))?;
    Ok((!d.is_zero()).then_some(d))
}

/// A clap value parser for a duration flag (`--stuck-after 10m`), so a bad value is a
/// usage error naming the flag.
pub fn duration_arg(flag: &'static str) -> impl Fn(&str) -> Result<Duration, String> + Clone + Send + Sync + 'static {
    move |text: &str| parse_duration(flag, text)
}

/// A clap value parser for a time limit in the --request-timeout grammar, where 0 means
/// none (the caller reads a zero Duration as "no limit").
pub fn limit_arg(flag: &'static str) -> impl Fn(&str) -> Result<Duration, String> + Clone + Send + Sync + 'static {
    move |text: &str| parse_limit(flag, text).map(Option::unwrap_or_default)
}

/// A duration flag other than --request-timeout: same grammar, zero allowed.
pub fn parse_duration(flag: &str, text: &str) -> Result<Duration, String> {
    let text = text.trim();
    to_duration(text)
        .ok_or_else(|| format!("invalid {flag} {text:?}: expected a whole number of seconds, or e.g. 30s, 5m, 1h30m"))
}

/// Plain seconds or a Go duration.
fn to_duration(text: &str) -> Option<Duration> {
    if text.is_empty() {
        return None;
    }
    let nanos: u128 = if text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<u64>().ok()? as u128 * 1_000_000_000
    } else {
        parse_go_duration(text)?
    };
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    Some(Duration::new(secs, (nanos % 1_000_000_000) as u32))
}

/// Go's duration grammar, non-negative only; total in nanoseconds.
fn parse_go_duration(text: &str) -> Option<u128> {
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, after) = rest.split_at(int_len);
        let (frac_part, after) = match after.strip_prefix('.') {
            Some(f) => {
                let n = f.bytes().take_while(u8::is_ascii_digit).count();
                f.split_at(n)
            }
            None => ("", after),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        let unit_len = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        let int: u128 = if int_part.is_empty() { 0 } else { int_part.parse().ok()? };
        let mut value = int.checked_mul(scale)?;
        // Fraction digits beyond nanosecond precision are dropped, as Go does.
        let mut place = scale;
        for digit in frac_part.bytes() {
            place /= 10;
            if place == 0 {
                break;
            }
            value = value.checked_add(u128::from(digit - b'0') * place)?;
        }
        total = total.checked_add(value)?;
        if total > u128::from(u64::MAX) {
            return None;
        }
        rest = after;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn secs(s: f64) -> Option<Duration> {
        Some(Duration::from_secs_f64(s))
    }

    #[test]
    fn kubectl_forms() {
        assert_eq!(parse_timeout("0"), Ok(None));
        assert_eq!(parse_timeout("0s"), Ok(None));
        assert_eq!(parse_timeout("30"), Ok(secs(30.0)));
        assert_eq!(parse_timeout("30s"), Ok(secs(30.0)));
        assert_eq!(parse_timeout("1m"), Ok(secs(60.0)));
        assert_eq!(parse_timeout("1h30m"), Ok(secs(5400.0)));
        assert_eq!(parse_timeout("1.5s"), Ok(secs(1.5)));
        assert_eq!(parse_timeout("300ms"), Ok(secs(0.3)));
        assert_eq!(parse_timeout(".5s"), Ok(secs(0.5)));
        assert_eq!(parse_timeout("2us"), Ok(Some(Duration::from_micros(2))));
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "s", "1x", "-1s", "-5", "1.s.", "1 s", "abc", "1m-", "..5s", "1e3s", "99999999999999999999h"] {
            let err = parse_timeout(bad).unwrap_err();
            assert!(err.starts_with("invalid --request-timeout"), "{bad}: {err}");
        }
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,24}") {
            let _ = parse_timeout(&s);
        }

        #[test]
        fn composed_units_add_up(h in 0u64..100, m in 0u64..100, s in 0u64..100, ms in 0u64..1000) {
            let text = format!("{h}h{m}m{s}s{ms}ms");
            let want = Duration::from_millis(((h * 60 + m) * 60 + s) * 1000 + ms);
            let got = parse_timeout(&text).unwrap().unwrap_or(Duration::ZERO);
            prop_assert_eq!(got, want);
        }
    }
}
