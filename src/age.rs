//! kubectl's human durations (`k8s.io/apimachinery/pkg/util/duration.HumanDuration`):
//! 45s, 3m12s, 5h, 12d, 2y.

use std::time::Duration;

use jiff::Timestamp;

pub fn human(d: Duration) -> String {
    let secs = d.as_secs();
    let (m, h, day) = (60, 3600, 86_400);
    let year = 365 * day;
    if secs < 2 * m {
        return format!("{secs}s");
    }
    if secs < 10 * m {
        return match secs % m {
            0 => format!("{}m", secs / m),
            s => format!("{}m{s}s", secs / m),
        };
    }
    if secs < 3 * h {
        return format!("{}m", secs / m);
    }
    if secs < 8 * h {
        return match (secs % h) / m {
            0 => format!("{}h", secs / h),
            mins => format!("{}h{mins}m", secs / h),
        };
    }
    if secs < 2 * day {
        return format!("{}h", secs / h);
    }
    if secs < 8 * day {
        return match (secs % day) / h {
            0 => format!("{}d", secs / day),
            hours => format!("{}d{hours}h", secs / day),
        };
    }
    if secs < 2 * year {
        return format!("{}d", secs / day);
    }
    if secs < 8 * year {
        return match (secs % year) / day {
            0 => format!("{}y", secs / year),
            days => format!("{}y{days}d", secs / year),
        };
    }
    format!("{}y", secs / year)
}

/// A duration to the millisecond where it is short (250ms, 1.25s, 48.3s), else as [`human`]:
/// the audit log's lags.
pub fn precise(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0..=999 => format!("{ms}ms"),
        1000..=9_999 => format!("{:.2}s", d.as_secs_f64()),
        10_000..=119_999 => format!("{:.1}s", d.as_secs_f64()),
        _ => human(d),
    }
}

/// Signed age: a time in the future (clock skew) prints as "-5s"... but as "in 5s" is clearer.
pub fn human_signed(seconds: i64) -> String {
    if seconds < 0 {
        format!("in {}", human(Duration::from_secs(seconds.unsigned_abs())))
    } else {
        human(Duration::from_secs(seconds as u64))
    }
}

/// Age of `then` on the server's clock `now`; `<unknown>` when either is missing.
pub fn since(then: Option<Timestamp>, now: Option<Timestamp>) -> String {
    match (then, now) {
        (Some(t), Some(n)) => human(Duration::from_secs(n.as_second().saturating_sub(t.as_second()).max(0) as u64)),
        _ => "<unknown>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_kubectl_human_duration() {
        let cases = [
            (0, "0s"),
            (45, "45s"),
            (119, "119s"),
            (120, "2m"),
            (192, "3m12s"),
            (599, "9m59s"),
            (600, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600, "3h"),
            (5 * 3600 + 60, "5h1m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (2 * 86_400, "2d"),
            (3 * 86_400 + 3600, "3d1h"),
            (12 * 86_400, "12d"),
            (2 * 365 * 86_400, "2y"),
            (9 * 365 * 86_400, "9y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human(Duration::from_secs(secs)), want, "{secs}s");
        }
        assert_eq!(human_signed(-5), "in 5s");
    }
}
