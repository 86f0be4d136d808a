//! Joins leases with their holders' pods and candidates into rows, findings and
//! summaries. Pure: the fetch layer supplies the snapshots.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Serialize;

use super::lease::{
    LeaseClass, LeaseSnapshot, LeaseState, classify, holder_pod_name, looks_like_controller_pod, renew_age_micros,
    state,
};
use crate::age::human;

/// What the fetch layer learned about the pod a holder names.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HolderPod {
    pub name: String,
    /// false: the pod does not exist. None: we may not read pods there.
    pub exists: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller: Option<Workload>,
}

/// The workload at the top of a pod's controller chain (Deployment via ReplicaSet, StatefulSet...).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Workload {
    pub kind: String,
    pub name: String,
    pub namespace: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CandidateSnapshot {
    pub namespace: String,
    pub name: String,
    pub lease_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emulation_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ping_time: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renew_time: Option<Timestamp>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeaseRow {
    pub namespace: String,
    pub name: String,
    pub class: LeaseClass,
    pub holder: Option<String>,
    pub state: LeaseState,
    /// Seconds since renewTime (or acquireTime) by the server's clock; negative when in the future.
    pub renew_age_seconds: Option<f64>,
    pub lease_duration_seconds: Option<i32>,
    pub lease_transitions: Option<i32>,
    pub acquire_time: Option<Timestamp>,
    pub renew_time: Option<Timestamp>,
    pub acquire_age_seconds: Option<f64>,
    pub strategy: Option<String>,
    pub preferred_holder: Option<String>,
    pub holder_pod: Option<HolderPod>,
    pub candidates: Vec<CandidateSnapshot>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    Expired,
    AtRisk,
    Skewed,
    HolderPodMissing,
    HolderNotCandidate,
    CandidateUnanswered,
    StrategyDisagreement,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub namespace: String,
    pub name: String,
    /// The kind's stable code (CO1xx).
    pub code: &'static str,
    pub kind: FindingKind,
    pub message: String,
}

/// "deployment/x: 1/3 replicas lead"
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Leadership {
    pub workload: Workload,
    /// Leases held by pods of this workload.
    pub leases: Vec<String>,
    /// Distinct pods of the workload that hold a lease.
    pub leading_pods: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSummary {
    pub total: usize,
    pub by_state: BTreeMap<String, usize>,
    /// Expired node leases, with whether their Node object still exists (None: unknown).
    pub expired: Vec<ExpiredNode>,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExpiredNode {
    pub name: String,
    pub node_exists: Option<bool>,
}

pub fn row(
    lease: &LeaseSnapshot,
    now: Timestamp,
    pod: Option<HolderPod>,
    candidates: Vec<CandidateSnapshot>,
) -> LeaseRow {
    let secs = |micros: i64| micros as f64 / 1e6;
    LeaseRow {
        namespace: lease.namespace.clone(),
        name: lease.name.clone(),
        class: classify(lease),
        holder: lease.holder().map(str::to_string),
        state: state(lease, now),
        renew_age_seconds: renew_age_micros(lease, now).map(secs),
        lease_duration_seconds: lease.duration_seconds,
        lease_transitions: lease.transitions,
        acquire_time: lease.acquire_time,
        renew_time: lease.renew_time,
        acquire_age_seconds: lease
            .acquire_time
            .map(|t| secs(lease.judged_at(now).as_microsecond() - t.as_microsecond())),
        strategy: lease.strategy.clone().filter(|s| !s.is_empty()),
        preferred_holder: lease.preferred_holder.clone().filter(|s| !s.is_empty()),
        holder_pod: pod,
        candidates,
    }
}

/// Whether the fetch layer should look for a pod behind this lease's holder.
pub fn wants_holder_pod(lease: &LeaseSnapshot) -> Option<&str> {
    match classify(lease) {
        LeaseClass::LeaderElection | LeaseClass::Generic | LeaseClass::Coordinated => {
            lease.holder().and_then(holder_pod_name)
        }
        _ => None,
    }
}

pub fn findings(rows: &[LeaseRow]) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in rows {
        let mut add = |kind: FindingKind, message: String| {
            out.push(Finding { namespace: r.namespace.clone(), name: r.name.clone(), code: kind.code(), kind, message })
        };
        let age_secs = r.renew_age_seconds.unwrap_or_default();
        let age = human(std::time::Duration::from_secs_f64(age_secs.abs()));
        let duration = r.lease_duration_seconds.unwrap_or_default();
        match r.state {
            LeaseState::Expired => add(
                FindingKind::Expired,
                format!("last renewed {age} ago, past its {duration}s duration: the holder stopped renewing"),
            ),
            LeaseState::AtRisk => add(
                FindingKind::AtRisk,
                format!("last renewed {age} ago, more than 2/3 of its {duration}s duration: renewals are late"),
            ),
            LeaseState::Skewed => add(
                FindingKind::Skewed,
                format!("renewTime is {age} in the API server's future: the holder's clock runs ahead"),
            ),
            _ => {}
        }
        if let Some(pod) = &r.holder_pod
            && pod.exists == Some(false)
            && r.class == LeaseClass::LeaderElection
            && looks_like_controller_pod(&pod.name)
            && matches!(r.state, LeaseState::Fresh | LeaseState::AtRisk)
        {
            add(
                FindingKind::HolderPodMissing,
                format!("holder pod {} does not exist, yet the lease is still {}", pod.name, r.state.as_str()),
            );
        }
        if !r.candidates.is_empty() {
            if let Some(holder) = &r.holder
                && !r.candidates.iter().any(|c| holder == &c.name || holder.starts_with(&format!("{}_", c.name)))
            {
                add(FindingKind::HolderNotCandidate, format!("holder {holder} is not among the lease's candidates"));
            }
            for c in &r.candidates {
                if let (Some(ping), renew) = (c.ping_time, c.renew_time)
                    && renew.is_none_or(|renew| ping > renew)
                {
                    add(
                        FindingKind::CandidateUnanswered,
                        format!("candidate {} has not answered its last ping", c.name),
                    );
                }
            }
            let mut strategies: Vec<&str> = r.candidates.iter().filter_map(|c| c.strategy.as_deref()).collect();
            strategies.sort_unstable();
            strategies.dedup();
            if strategies.len() > 1 {
                add(
                    FindingKind::StrategyDisagreement,
                    format!("candidates disagree on the strategy: {}", strategies.join(", ")),
                );
            }
        }
    }
    out.sort();
    out
}

pub fn leadership(rows: &[LeaseRow]) -> Vec<Leadership> {
    let mut by_workload: BTreeMap<Workload, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for r in rows {
        let Some(pod) = &r.holder_pod else { continue };
        let Some(w) = &pod.controller else { continue };
        if !matches!(r.state, LeaseState::Fresh | LeaseState::AtRisk | LeaseState::Skewed) {
            continue;
        }
        let entry = by_workload.entry(w.clone()).or_default();
        entry.0.push(format!("{}/{}", r.namespace, r.name));
        if !entry.1.contains(&pod.name) {
            entry.1.push(pod.name.clone());
        }
    }
    by_workload
        .into_iter()
        .map(|(workload, (leases, pods))| Leadership { workload, leases, leading_pods: pods.len() })
        .collect()
}

pub fn node_summary(rows: &[LeaseRow], node_exists: &dyn Fn(&str) -> Option<bool>) -> NodeSummary {
    let mut summary = NodeSummary::default();
    for r in rows.iter().filter(|r| r.class == LeaseClass::NodeHeartbeat) {
        summary.total += 1;
        *summary.by_state.entry(r.state.as_str().to_string()).or_default() += 1;
        if r.state == LeaseState::Expired {
            summary.expired.push(ExpiredNode { name: r.name.clone(), node_exists: node_exists(&r.name) });
        }
    }
    summary
}

impl FindingKind {
    /// Its stable code (analyze/codes.rs lists them all).
    pub fn code(&self) -> &'static str {
        match self {
            FindingKind::Expired => "CO101",
            FindingKind::AtRisk => "CO102",
            FindingKind::Skewed => "CO103",
            FindingKind::HolderPodMissing => "CO104",
            FindingKind::HolderNotCandidate => "CO105",
            FindingKind::CandidateUnanswered => "CO106",
            FindingKind::StrategyDisagreement => "CO107",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        Timestamp::from_second(1_800_000_000).unwrap()
    }

    fn snap(ns: &str, name: &str, holder: &str, ago: i64) -> LeaseSnapshot {
        LeaseSnapshot {
            namespace: ns.into(),
            name: name.into(),
            holder: Some(holder.into()),
            duration_seconds: Some(15),
            renew_time: Some(Timestamp::from_second(1_800_000_000 - ago).unwrap()),
            ..Default::default()
        }
    }

    const UUID: &str = "6c65e70f-c5d7-4c0c-b287-dfb5f5da81e7";

    fn pod(name: &str, exists: bool, w: Option<&str>) -> HolderPod {
        HolderPod {
            name: name.into(),
            exists: Some(exists),
            phase: None,
            ready: None,
            controller: w.map(|n| Workload {
                kind: "Deployment".into(),
                name: n.into(),
                namespace: "apps".into(),
                replicas: Some(3),
            }),
        }
    }

    #[test]
    fn missing_holder_pod_is_flagged_only_while_the_lease_is_live() {
        let fresh =
            row(&snap("apps", "lock", &format!("web-1_{UUID}"), 1), now(), Some(pod("web-1", false, None)), vec![]);
        let dead =
            row(&snap("apps", "lock2", &format!("web-1_{UUID}"), 100), now(), Some(pod("web-1", false, None)), vec![]);
        // A host outside the cluster also uses its hostname: not a pod, so nothing is missing.
        let host = row(
            &snap("apps", "lock3", &format!("build-host_{UUID}"), 1),
            now(),
            Some(pod("build-host", false, None)),
            vec![],
        );
        let f = findings(&[fresh, dead, host]);
        let kinds: Vec<_> = f.iter().map(|f| (f.name.as_str(), f.kind.clone())).collect();
        assert_eq!(kinds, vec![("lock", FindingKind::HolderPodMissing), ("lock2", FindingKind::Expired)]);
    }

    #[test]
    fn leadership_counts_leases_and_pods_per_workload() {
        let rows = vec![
            row(&snap("apps", "a", &format!("web-1_{UUID}"), 1), now(), Some(pod("web-1", true, Some("web"))), vec![]),
            row(&snap("apps", "b", &format!("web-1_{UUID}"), 1), now(), Some(pod("web-1", true, Some("web"))), vec![]),
            row(
                &snap("apps", "c", &format!("web-2_{UUID}"), 100),
                now(),
                Some(pod("web-2", true, Some("web"))),
                vec![],
            ),
        ];
        let l = leadership(&rows);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].leases, vec!["apps/a", "apps/b"]);
        assert_eq!(l[0].leading_pods, 1);
    }

    #[test]
    fn candidate_findings() {
        let t = |s: i64| Some(Timestamp::from_second(1_800_000_000 - s).unwrap());
        let cand = |name: &str, strategy: &str, ping, renew| CandidateSnapshot {
            namespace: "kube-system".into(),
            name: name.into(),
            lease_name: "kube-scheduler".into(),
            binary_version: None,
            emulation_version: None,
            strategy: Some(strategy.into()),
            ping_time: ping,
            renew_time: renew,
        };
        let mut l = snap("kube-system", "kube-scheduler", &format!("elsewhere_{UUID}"), 1);
        l.strategy = Some("OldestEmulationVersion".into());
        let r =
            row(&l, now(), None, vec![cand("a", "OldestEmulationVersion", t(1), t(5)), cand("b", "Other", None, t(1))]);
        let kinds: Vec<_> = findings(&[r]).into_iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            vec![FindingKind::HolderNotCandidate, FindingKind::CandidateUnanswered, FindingKind::StrategyDisagreement]
        );
    }

    #[test]
    fn node_summary_names_expired_nodes() {
        let rows: Vec<_> = [("n1", 1), ("n2", 100), ("n3", 100)]
            .iter()
            .map(|(n, ago)| row(&snap("kube-node-lease", n, n, *ago), now(), None, vec![]))
            .collect();
        let s = node_summary(&rows, &|n| Some(n == "n2"));
        assert_eq!(s.total, 3);
        assert_eq!(s.by_state.get("expired"), Some(&2));
        assert_eq!(
            s.expired,
            vec![
                ExpiredNode { name: "n2".into(), node_exists: Some(true) },
                ExpiredNode { name: "n3".into(), node_exists: Some(false) }
            ]
        );
    }
}
