//! client-go's observed-time rule for a watching tool: a lease is judged by when
//! *we* last saw its record change, on our own monotonic clock, never by the
//! timestamps inside it. Immune to clock skew between holder, server and us.
//! Pure: callers pass in "now" as a duration since they started.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::lease::LeaseSnapshot;

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", rename_all_fields = "camelCase", tag = "event")]
pub enum WatchEvent {
    /// First sight of a lease (at start, or created later).
    Added {
        holder: Option<String>,
        transitions: Option<i32>,
    },
    /// The same holder renewed; `interval` since the previous renewal we observed.
    Renewed {
        holder: String,
        interval_seconds: Option<f64>,
    },
    /// A different identity holds it now (or it was released / re-acquired).
    LeaderChanged {
        from: Option<String>,
        to: Option<String>,
        transitions: Option<i32>,
    },
    /// No change observed for more than 2/3 of the duration.
    AtRisk {
        holder: String,
        unobserved_seconds: f64,
        duration_seconds: i32,
    },
    /// No change observed for longer than the duration.
    Expired {
        holder: String,
        unobserved_seconds: f64,
        duration_seconds: i32,
    },
    Deleted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Health {
    Live,
    AtRisk,
    Expired,
}

#[derive(Debug, Clone)]
struct Observed {
    lease: LeaseSnapshot,
    /// When the record last changed, on our clock.
    observed_at: Duration,
    /// When we last saw a renewal by the current holder.
    renewed_at: Option<Duration>,
    health: Health,
}

#[derive(Debug, Default)]
pub struct Tracker {
    leases: BTreeMap<(String, String), Observed>,
}

pub type Keyed = ((String, String), WatchEvent);

impl Tracker {
    /// A lease as seen in a list or a watch event (ADDED or MODIFIED).
    pub fn observe(&mut self, lease: LeaseSnapshot, now: Duration) -> Vec<Keyed> {
        let key = (lease.namespace.clone(), lease.name.clone());
        let mut events = Vec::new();
        match self.leases.get_mut(&key) {
            None => {
                events.push(WatchEvent::Added {
                    holder: lease.holder().map(str::to_string),
                    transitions: lease.transitions,
                });
                // The renewal before this one was not observed: the first interval is unknown.
                self.leases
                    .insert(key.clone(), Observed { lease, observed_at: now, renewed_at: None, health: Health::Live });
            }
            Some(seen) => {
                let before = &seen.lease;
                if before.holder() != lease.holder() {
                    events.push(WatchEvent::LeaderChanged {
                        from: before.holder().map(str::to_string),
                        to: lease.holder().map(str::to_string),
                        transitions: lease.transitions,
                    });
                    seen.renewed_at = lease.holder().map(|_| now);
                } else if before.renew_time != lease.renew_time {
                    if let Some(holder) = lease.holder() {
                        let interval = seen.renewed_at.map(|t| (now.saturating_sub(t)).as_secs_f64());
                        events.push(WatchEvent::Renewed { holder: holder.to_string(), interval_seconds: interval });
                    }
                    seen.renewed_at = Some(now);
                } else if before == &lease {
                    // A re-list after a closed watch shows the same record: nothing happened.
                    return Vec::new();
                }
                seen.lease = lease;
                seen.observed_at = now;
                seen.health = Health::Live;
            }
        }
        events.into_iter().map(|e| (key.clone(), e)).collect()
    }

    pub fn delete(&mut self, namespace: &str, name: &str) -> Vec<Keyed> {
        let key = (namespace.to_string(), name.to_string());
        match self.leases.remove(&key) {
            Some(_) => vec![(key, WatchEvent::Deleted)],
            None => Vec::new(),
        }
    }

    /// After a re-list: leases we knew that are no longer there were deleted meanwhile.
    pub fn retain_listed(&mut self, listed: &[(String, String)]) -> Vec<Keyed> {
        let gone: Vec<(String, String)> = self.leases.keys().filter(|k| !listed.contains(k)).cloned().collect();
        gone.into_iter().flat_map(|(ns, name)| self.delete(&ns, &name)).collect()
    }

    /// The watch was blind from `since` to `now` (the API server was gone): that time does not
    /// count against a holder, whose renewals could not be seen either. Leases observed after
    /// the watch came back keep their time.
    pub fn forgive(&mut self, since: Duration, now: Duration) {
        let blind = now.saturating_sub(since);
        for seen in self.leases.values_mut().filter(|seen| seen.observed_at <= since) {
            seen.observed_at += blind;
        }
    }

    /// Time passing: leases whose record has not changed for too long.
    pub fn tick(&mut self, now: Duration) -> Vec<Keyed> {
        let mut events = Vec::new();
        for (key, seen) in &mut self.leases {
            let (Some(holder), Some(duration)) = (seen.lease.holder(), seen.lease.duration_seconds) else {
                continue;
            };
            let unobserved = now.saturating_sub(seen.observed_at);
            let limit = Duration::from_secs(duration.max(0) as u64);
            let health = if unobserved > limit {
                Health::Expired
            } else if unobserved * 3 > limit * 2 {
                Health::AtRisk
            } else {
                Health::Live
            };
            if health == seen.health || health == Health::Live {
                continue;
            }
            let (holder, unobserved_seconds) = (holder.to_string(), unobserved.as_secs_f64());
            events.push((
                key.clone(),
                match health {
                    Health::AtRisk => WatchEvent::AtRisk { holder, unobserved_seconds, duration_seconds: duration },
                    _ => WatchEvent::Expired { holder, unobserved_seconds, duration_seconds: duration },
                },
            ));
            seen.health = health;
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::Timestamp;

    fn lease(holder: &str, renew: i64, transitions: i32) -> LeaseSnapshot {
        LeaseSnapshot {
            namespace: "ns".into(),
            name: "lock".into(),
            holder: Some(holder.into()),
            duration_seconds: Some(6),
            renew_time: Some(Timestamp::from_second(renew).unwrap()),
            transitions: Some(transitions),
            ..Default::default()
        }
    }

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    fn events(v: Vec<Keyed>) -> Vec<WatchEvent> {
        v.into_iter().map(|(_, e)| e).collect()
    }

    #[test]
    fn renewals_then_decay_then_takeover() {
        let mut t = Tracker::default();
        assert!(matches!(events(t.observe(lease("a", 100, 0), s(0.0)))[..], [WatchEvent::Added { .. }]));
        assert_eq!(
            events(t.observe(lease("a", 101, 0), s(0.5))),
            vec![WatchEvent::Renewed { holder: "a".into(), interval_seconds: None }]
        );
        assert_eq!(
            events(t.observe(lease("a", 102, 0), s(2.0))),
            vec![WatchEvent::Renewed { holder: "a".into(), interval_seconds: Some(1.5) }]
        );
        assert!(t.tick(s(5.0)).is_empty());
        let risky = events(t.tick(s(6.5)));
        assert!(matches!(&risky[..], [WatchEvent::AtRisk { unobserved_seconds, .. }] if *unobserved_seconds == 4.5));
        assert!(t.tick(s(7.0)).is_empty(), "reported once");
        assert!(matches!(events(t.tick(s(8.5)))[..], [WatchEvent::Expired { .. }]));
        assert_eq!(
            events(t.observe(lease("b", 109, 1), s(9.0))),
            vec![WatchEvent::LeaderChanged { from: Some("a".into()), to: Some("b".into()), transitions: Some(1) }]
        );
        assert!(t.tick(s(10.0)).is_empty(), "the new holder is live");
    }

    #[test]
    fn time_the_watch_was_blind_does_not_count_against_a_holder() {
        let mut t = Tracker::default();
        t.observe(lease("a", 100, 0), s(0.0));
        // Blind from 1 s to 12 s: the 6 s lease was not seen renewing, nor could it be.
        t.forgive(s(1.0), s(12.0));
        assert!(t.tick(s(12.5)).is_empty());
        // Its clock runs again from there: 11 s of blindness off, expired 6 s after 1 s + 11 s.
        assert!(matches!(events(t.tick(s(15.5)))[..], [WatchEvent::AtRisk { .. }]));
        assert!(matches!(events(t.tick(s(17.5)))[..], [WatchEvent::Expired { .. }]));
        // A lease seen after the watch came back is not moved.
        let mut t = Tracker::default();
        t.observe(lease("a", 100, 0), s(13.0));
        t.forgive(s(1.0), s(12.0));
        assert!(matches!(events(t.tick(s(17.5)))[..], [WatchEvent::AtRisk { .. }]));
    }

    #[test]
    fn timestamps_inside_the_record_do_not_matter() {
        // renewTime far in the past (a skewed holder) but changing: still live.
        let mut t = Tracker::default();
        t.observe(lease("a", 0, 0), s(0.0));
        t.observe(lease("a", 1, 0), s(3.0));
        assert!(t.tick(s(6.0)).is_empty());
    }

    #[test]
    fn relisting_the_same_record_prints_nothing_and_gone_leases_are_deleted() {
        let mut t = Tracker::default();
        t.observe(lease("a", 100, 0), s(0.0));
        assert!(t.observe(lease("a", 100, 0), s(1.0)).is_empty());
        assert_eq!(events(t.retain_listed(&[])), vec![WatchEvent::Deleted]);
        assert!(t.delete("ns", "lock").is_empty());
    }
}
