//! Lease classification and health, judged against the API server's clock.
//! Pure: plain snapshots in, verdicts out.

use jiff::Timestamp;
use serde::Serialize;

/// What a Lease is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LeaseClass {
    /// kube-node-lease/<node>: the kubelet's heartbeat.
    NodeHeartbeat,
    /// kube-system apiserver-<hash>, labelled apiserver.kubernetes.io/identity=kube-apiserver.
    ApiserverIdentity,
    /// spec.strategy set: coordinated leader election with LeaseCandidates.
    Coordinated,
    /// kube-system/kube-controller-manager, kube-scheduler, cloud-controller-manager.
    ControlPlane,
    /// Holder `<name>_<uuid>`: client-go / controller-runtime election.
    LeaderElection,
    Generic,
}

impl LeaseClass {
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseClass::NodeHeartbeat => "node-heartbeat",
            LeaseClass::ApiserverIdentity => "apiserver-identity",
            LeaseClass::Coordinated => "coordinated",
            LeaseClass::ControlPlane => "control-plane",
            LeaseClass::LeaderElection => "leader-election",
            LeaseClass::Generic => "generic",
        }
    }
}

/// Health of a lease at the server's "now".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LeaseState {
    /// Renewed within two thirds of its duration.
    Fresh,
    /// Older than two thirds of the duration: a renew deadline is being missed.
    AtRisk,
    /// Older than the duration: any candidate may take it.
    Expired,
    /// Empty or null holder: given up cleanly.
    Released,
    /// renewTime is in the server's future: the holder's clock runs ahead.
    Skewed,
    /// No renewTime/acquireTime or no duration: nothing to judge by.
    Unknown,
}

impl LeaseState {
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseState::Fresh => "fresh",
            LeaseState::AtRisk => "at-risk",
            LeaseState::Expired => "expired",
            LeaseState::Released => "released",
            LeaseState::Skewed => "skewed",
            LeaseState::Unknown => "unknown",
        }
    }

    /// States that `--exit-code` turns into exit 3.
    pub fn is_problem(self) -> bool {
        matches!(self, LeaseState::AtRisk | LeaseState::Expired | LeaseState::Skewed)
    }
}

/// The HTTP Date header has whole seconds, so the server's "now" may lag its real
/// clock by up to a second; a renewTime is only called skewed beyond this margin.
pub const SKEW_MARGIN_MICROS: i64 = 2_000_000;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LeaseSnapshot {
    pub namespace: String,
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub holder: Option<String>,
    pub duration_seconds: Option<i32>,
    pub acquire_time: Option<Timestamp>,
    pub renew_time: Option<Timestamp>,
    pub transitions: Option<i32>,
    pub strategy: Option<String>,
    pub preferred_holder: Option<String>,
    /// The Date of the answer that carried the lease (of a list, its first page's, whose
    /// snapshot every later page holds): the server's clock it is judged by. Under throttling
    /// one list answers seconds after another, and a renewTime judged by an earlier list's
    /// clock looked to be in the future; judged by a later page's, a lease read at the first
    /// page looked late. None (a watch event, a test) judges by the `now` given.
    pub read_at: Option<Timestamp>,
}

impl LeaseSnapshot {
    pub fn holder(&self) -> Option<&str> {
        self.holder.as_deref().filter(|h| !h.is_empty())
    }

    /// The server's clock for this lease: its answer's Date, else `now`.
    pub fn judged_at(&self, now: Timestamp) -> Timestamp {
        self.read_at.unwrap_or(now)
    }
}

pub fn classify(lease: &LeaseSnapshot) -> LeaseClass {
    let label = |k: &str| lease.labels.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    if lease.namespace == "kube-node-lease" {
        return LeaseClass::NodeHeartbeat;
    }
    if lease.namespace == "kube-system" && label("apiserver.kubernetes.io/identity") == Some("kube-apiserver") {
        return LeaseClass::ApiserverIdentity;
    }
    if lease.strategy.as_deref().is_some_and(|s| !s.is_empty()) {
        return LeaseClass::Coordinated;
    }
    if lease.namespace == "kube-system"
        && matches!(lease.name.as_str(), "kube-controller-manager" | "kube-scheduler" | "cloud-controller-manager")
    {
        return LeaseClass::ControlPlane;
    }
    if lease.holder().and_then(split_holder).is_some() {
        return LeaseClass::LeaderElection;
    }
    LeaseClass::Generic
}

/// Renew age in microseconds at the lease's own clock, `now` without one (negative:
/// renewTime is in the future). Falls back to acquireTime for a lease that was acquired but
/// never renewed.
pub fn renew_age_micros(lease: &LeaseSnapshot, now: Timestamp) -> Option<i64> {
    let at = lease.renew_time.or(lease.acquire_time)?;
    Some(lease.judged_at(now).as_microsecond() - at.as_microsecond())
}

pub fn state(lease: &LeaseSnapshot, now: Timestamp) -> LeaseState {
    if lease.holder().is_none() {
        return LeaseState::Released;
    }
    let (Some(age), Some(duration)) = (renew_age_micros(lease, now), lease.duration_seconds) else {
        return LeaseState::Unknown;
    };
    if age < -SKEW_MARGIN_MICROS {
        return LeaseState::Skewed;
    }
    let duration = i64::from(duration.max(0)) * 1_000_000;
    if age > duration {
        LeaseState::Expired
    } else if age * 3 > duration * 2 {
        LeaseState::AtRisk
    } else {
        LeaseState::Fresh
    }
}

/// `<name>_<uuid>` holders (client-go, controller-runtime): the name part, which is the
/// hostname, and inside a pod the pod's name.
pub fn split_holder(holder: &str) -> Option<&str> {
    let (name, uuid) = holder.rsplit_once('_')?;
    (is_uuid(uuid) && !name.is_empty()).then_some(name)
}

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The pod name a holder points at, if it can be a pod name: `<pod>_<uuid>` or a plain
/// DNS-1123 subdomain.
pub fn holder_pod_name(holder: &str) -> Option<&str> {
    let name = split_holder(holder).unwrap_or(holder);
    is_dns_subdomain(name).then_some(name)
}

/// Whether a name has the shape of a pod a controller made: `<base>-<5 random chars>`
/// (ReplicaSet, DaemonSet, Job pods; the alphabet of apimachinery's rand.String) or
/// `<base>-<ordinal>` (StatefulSet). A missing pod is only worth flagging for those:
/// a process outside the cluster also uses its hostname as the holder.
pub fn looks_like_controller_pod(name: &str) -> bool {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let Some((base, suffix)) = name.rsplit_once('-') else {
        return false;
    };
    !base.is_empty()
        && ((suffix.len() == 5 && suffix.bytes().all(|b| ALPHABET.contains(&b)))
            || (!suffix.is_empty() && suffix.len() <= 5 && suffix.bytes().all(|b| b.is_ascii_digit())))
}

fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| {
            !part.is_empty()
                && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NOW: i64 = 1_800_000_000;

    fn at(secs_ago: f64) -> Option<Timestamp> {
        Some(Timestamp::from_microsecond(NOW * 1_000_000 - (secs_ago * 1e6) as i64).unwrap())
    }

    fn now() -> Timestamp {
        Timestamp::from_second(NOW).unwrap()
    }

    fn lease(ns: &str, name: &str, holder: &str) -> LeaseSnapshot {
        LeaseSnapshot {
            namespace: ns.into(),
            name: name.into(),
            holder: Some(holder.into()),
            duration_seconds: Some(15),
            renew_time: at(1.0),
            ..Default::default()
        }
    }

    #[test]
    fn classes_in_order() {
        let uuid = "vm_6c65e70f-c5d7-4c0c-b287-dfb5f5da81e7";
        assert_eq!(classify(&lease("kube-node-lease", "node-a", "node-a")), LeaseClass::NodeHeartbeat);
        let mut ident = lease("kube-system", "apiserver-abc", &format!("apiserver-abc_{}", &uuid[3..]));
        ident.labels = vec![("apiserver.kubernetes.io/identity".into(), "kube-apiserver".into())];
        assert_eq!(classify(&ident), LeaseClass::ApiserverIdentity);
        let mut coordinated = lease("kube-system", "kube-scheduler", uuid);
        coordinated.strategy = Some("OldestEmulationVersion".into());
        assert_eq!(classify(&coordinated), LeaseClass::Coordinated);
        assert_eq!(classify(&lease("kube-system", "kube-scheduler", uuid)), LeaseClass::ControlPlane);
        assert_eq!(classify(&lease("apps", "my-lock", uuid)), LeaseClass::LeaderElection);
        assert_eq!(classify(&lease("apps", "my-lock", "some-pod")), LeaseClass::Generic);
        // A control-plane lease in another namespace is just a leader election.
        assert_eq!(classify(&lease("other", "kube-scheduler", uuid)), LeaseClass::LeaderElection);
    }

    #[test]
    fn states_against_the_server_clock() {
        let mut l = lease("a", "b", "h");
        for (ago, want) in [
            (0.0, LeaseState::Fresh),
            (9.9, LeaseState::Fresh),
            (10.0, LeaseState::Fresh),
            (10.1, LeaseState::AtRisk),
            (15.0, LeaseState::AtRisk),
            (15.1, LeaseState::Expired),
            (-1.5, LeaseState::Fresh),
            (-2.5, LeaseState::Skewed),
        ] {
            l.renew_time = at(ago);
            assert_eq!(state(&l, now()), want, "{ago}s ago");
        }
        l.holder = Some(String::new());
        assert_eq!(state(&l, now()), LeaseState::Released);
        l.holder = None;
        assert_eq!(state(&l, now()), LeaseState::Released);
        let mut l = lease("a", "b", "h");
        l.duration_seconds = None;
        assert_eq!(state(&l, now()), LeaseState::Unknown);
        let mut l = lease("a", "b", "h");
        l.renew_time = None;
        l.acquire_time = at(20.0);
        assert_eq!(state(&l, now()), LeaseState::Expired);
    }

    /// A lease is judged by the clock of the answer that carried it, not by a run's "now"
    /// taken from an earlier (or later) answer.
    #[test]
    fn judged_by_the_date_of_its_own_answer() {
        let mut l = lease("kube-system", "kube-controller-manager", "h");
        // Renewed 3 s after the clock the run started with, read in an answer 4 s later.
        l.renew_time = at(-3.0);
        assert_eq!(state(&l, now()), LeaseState::Skewed);
        l.read_at = Some(Timestamp::from_second(NOW + 4).unwrap());
        assert_eq!(state(&l, now()), LeaseState::Fresh);
        assert_eq!(renew_age_micros(&l, now()), Some(1_000_000));
        // And the other way: read long before the run's clock, it is not expired by it.
        l.renew_time = at(1.0);
        l.read_at = Some(now());
        assert_eq!(state(&l, Timestamp::from_second(NOW + 60).unwrap()), LeaseState::Fresh);
    }

    #[test]
    fn holders() {
        assert_eq!(split_holder("web-7d9f8c-abcde_6c65e70f-c5d7-4c0c-b287-dfb5f5da81e7"), Some("web-7d9f8c-abcde"));
        assert_eq!(split_holder("my_host_6c65e70f-c5d7-4c0c-b287-dfb5f5da81e7"), Some("my_host"));
        assert_eq!(split_holder("web_notauuid"), None);
        assert_eq!(split_holder("_6c65e70f-c5d7-4c0c-b287-dfb5f5da81e7"), None);
        assert_eq!(holder_pod_name("web-0"), Some("web-0"));
        assert_eq!(holder_pod_name("my_host_6c65e70f-c5d7-4c0c-b287-dfb5f5da81e7"), None);
        assert_eq!(holder_pod_name("Web"), None);
        assert!(looks_like_controller_pod("web-7d9f8c5b4-x2kqz"));
        assert!(looks_like_controller_pod("db-0"));
        assert!(!looks_like_controller_pod("demo-elector-a"));
        assert!(!looks_like_controller_pod("my-host"));
        assert!(!looks_like_controller_pod("-x2kqz"));
        // 'a', 'e', 'i', 'o', 'u', '0', '1', '3' are not in the random alphabet.
        assert!(!looks_like_controller_pod("web-abcde"));
    }

    proptest! {
        #[test]
        fn state_is_total_and_monotone_in_age(ago in -100_000i64..10_000_000, dur in 0i32..3600) {
            let mut l = lease("a", "b", "h");
            l.duration_seconds = Some(dur);
            l.renew_time = Some(Timestamp::from_microsecond(NOW * 1_000_000 - ago).unwrap());
            let s1 = state(&l, now());
            l.renew_time = Some(Timestamp::from_microsecond(NOW * 1_000_000 - ago - 1_000_000).unwrap());
            let s2 = state(&l, now());
            // Growing older never makes a non-skewed lease healthier.
            if s1 != LeaseState::Skewed && s2 != LeaseState::Skewed {
                prop_assert!(s2 >= s1, "{:?} then {:?}", s1, s2);
            }
        }

        #[test]
        fn holder_parsing_never_panics(h in "\\PC{0,80}") {
            let _ = split_holder(&h);
            let _ = holder_pod_name(&h);
        }
    }
}
