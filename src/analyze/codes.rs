//! A stable code for every kind of finding `check` reports: what an ignore annotation or an
//! ignore file names, what a CI log is grepped for. Codes never change meaning and are never
//! reused; a new kind of finding gets the next free number of its mechanism (1xx leases,
//! 2xx owners, 3xx overlaps, 4xx fields, 5xx trace, 6xx history). The matches below are
//! exhaustive, so a new kind does not compile until it has a code. Each analysis says its own
//! kinds' codes (`kind.code()`, beside the kind); this table is what they must agree with (the
//! tests below), and it imports none of them.

use serde::Serialize;

pub const LEADERLESS: &str = "CO108";
pub const SELECTORS_OVERLAP: &str = "CO301";
pub const SEVERAL_DISRUPTION_BUDGETS: &str = "CO302";
/// check -f: a controller from the files would adopt live orphan pods.
pub const ADOPTS_LIVE_PODS: &str = "CO303";
/// check -f: applying the files would take fields another manager owns.
pub const APPLY_TAKES_FIELDS: &str = "CO408";

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    serde::Deserialize,
    clap::ValueEnum,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Mechanism {
    Leases,
    Owners,
    Overlaps,
    Fields,
    Trace,
    /// Findings over a window of the API server's audit log (check --audit-log).
    History,
}

impl Mechanism {
    pub const ALL: [Mechanism; 6] = [
        Mechanism::Leases,
        Mechanism::Owners,
        Mechanism::Overlaps,
        Mechanism::Fields,
        Mechanism::Trace,
        Mechanism::History,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Leases => "leases",
            Mechanism::Owners => "owners",
            Mechanism::Overlaps => "overlaps",
            Mechanism::Fields => "fields",
            Mechanism::Trace => "trace",
            Mechanism::History => "history",
        }
    }
}

/// Every code with its mechanism, the reason `check` prints beside it, and what it means:
/// docs/check.md's table and `--ignore-file`'s check of the codes it names.
pub const ALL: &[(&str, Mechanism, &str, &str)] = &[
    ("CO101", Mechanism::Leases, "expired", "a lease not renewed within its duration: the holder stopped"),
    ("CO102", Mechanism::Leases, "at-risk", "renewed late: near expiry, a leader about to lose its lease"),
    ("CO103", Mechanism::Leases, "skewed", "renewTime in the API server's future: the holder's clock runs ahead"),
    ("CO104", Mechanism::Leases, "holder-pod-missing", "the holder names a pod that does not exist"),
    ("CO105", Mechanism::Leases, "holder-not-candidate", "the holder is none of the lease's LeaseCandidates"),
    ("CO106", Mechanism::Leases, "candidate-unanswered", "a LeaseCandidate not renewed after a ping"),
    ("CO107", Mechanism::Leases, "strategy-disagreement", "candidates ask for different election strategies"),
    ("CO108", Mechanism::Leases, "leaderless", "a control-plane lease released and not taken: no leader"),
    (
        "CO201",
        Mechanism::Owners,
        "dangling-reference",
        "an ownerReference to an object that is gone or has another uid",
    ),
    ("CO202", Mechanism::Owners, "cross-namespace-reference", "a namespaced owner in another namespace"),
    ("CO203", Mechanism::Owners, "cluster-scoped-dependent", "a cluster-scoped object owned by a namespaced one"),
    ("CO204", Mechanism::Owners, "owner-kind-not-served", "an owner of a kind the API does not serve"),
    ("CO205", Mechanism::Owners, "multiple-controllers", "more than one ownerReference with controller: true"),
    ("CO206", Mechanism::Owners, "reference-cycle", "ownerReferences that form a cycle"),
    ("CO207", Mechanism::Owners, "stuck-in-deletion", "deleting for longer than --stuck-after, finalizers left"),
    (
        "CO301",
        Mechanism::Overlaps,
        "selectors-overlap",
        "two controllers of one kind whose selectors can match one pod",
    ),
    ("CO302", Mechanism::Overlaps, "several-disruption-budgets", "pods matched by several PodDisruptionBudgets"),
    (
        "CO303",
        Mechanism::Overlaps,
        "adopts-live-pods",
        "check -f: a controller from the files would adopt live pods no controller owns",
    ),
    ("CO401", Mechanism::Fields, "shared-apply", "two Apply managers own a field with equal values"),
    ("CO402", Mechanism::Fields, "apply-and-update", "an Apply and an Update manager own one field"),
    ("CO403", Mechanism::Fields, "update-and-update", "two Update managers took a field from each other"),
    (
        "CO404",
        Mechanism::Fields,
        "update-inside-apply",
        "an Update manager owns a field inside what an Apply manager declares",
    ),
    ("CO405", Mechanism::Fields, "status-via-main-resource", "a status field written through the main resource"),
    ("CO406", Mechanism::Fields, "spec-via-status", "a non-status field written through the status subresource"),
    (
        "CO407",
        Mechanism::Fields,
        "same-manager-apply-and-update",
        "one manager owns fields through both Apply and Update",
    ),
    (
        "CO408",
        Mechanism::Fields,
        "apply-takes-fields",
        "check -f: applying the files would take fields another manager owns, with other values",
    ),
    ("CO501", Mechanism::Trace, "generation-not-observed", "a controller has not observed the object's generation"),
    ("CO502", Mechanism::Trace, "replicas-short", "fewer pods than asked for, and none created for a while"),
    ("CO503", Mechanism::Trace, "unscheduled", "pods with no node"),
    ("CO504", Mechanism::Trace, "not-started", "a pod bound to a node whose kubelet never reported it"),
    ("CO505", Mechanism::Trace, "status-not-written", "the spec changed after the status was last written"),
    ("CO601", Mechanism::History, "fight", "two writers changed the same field (or part of an object) in turn"),
    ("CO602", Mechanism::History, "conflicts", "writes refused with 409 Conflict: a writer racing others, or itself"),
    ("CO603", Mechanism::History, "hot-loop", "one writer rewriting one object many times a minute, for minutes"),
    ("CO604", Mechanism::History, "leadership-churn", "a Lease taken over again and again"),
    ("CO605", Mechanism::History, "renewal-gap", "a Lease not renewed for longer than its duration"),
    ("CO606", Mechanism::History, "two-leaders", "two holders renewing one Lease in turn"),
    ("CO607", Mechanism::History, "slow-reaction", "a controller slow to react to writes of the objects it owns"),
];

/// Whether `code` is one of [`ALL`].
pub fn known(code: &str) -> bool {
    ALL.iter().any(|(c, ..)| *c == code)
}

#[cfg(test)]
mod tests {
    use super::*;
    // The analyses are imported by the tests alone: each says its kinds' codes, the table
    // must agree.
    use crate::analyze::fields::ContestKind;
    use crate::analyze::history::verdicts::Kind as HistoryFinding;
    use crate::analyze::lease_report::FindingKind as LeaseFinding;
    use crate::analyze::owner_graph::FindingKind as OwnerFinding;
    use crate::analyze::stall::StallKind;
    use crate::text::serde_name;

    fn entry(code: &str) -> (Mechanism, &'static str) {
        let (_, m, reason, _) = ALL.iter().find(|(c, ..)| *c == code).unwrap_or_else(|| panic!("{code} not listed"));
        (*m, reason)
    }

    #[test]
    fn every_kind_has_a_listed_code_whose_reason_is_its_serde_name() {
        use LeaseFinding as L;
        for k in [
            L::Expired,
            L::AtRisk,
            L::Skewed,
            L::HolderPodMissing,
            L::HolderNotCandidate,
            L::CandidateUnanswered,
            L::StrategyDisagreement,
        ] {
            assert_eq!(entry(k.code()), (Mechanism::Leases, serde_name(&k).as_str()));
        }
        use OwnerFinding as O;
        for k in [
            O::DanglingReference,
            O::CrossNamespaceReference,
            O::ClusterScopedDependent,
            O::OwnerKindNotServed,
            O::MultipleControllers,
            O::ReferenceCycle,
            O::StuckInDeletion,
        ] {
            assert_eq!(entry(k.code()), (Mechanism::Owners, serde_name(&k).as_str()));
        }
        use ContestKind as C;
        for k in [
            C::SharedApply,
            C::ApplyAndUpdate,
            C::UpdateAndUpdate,
            C::UpdateInsideApply,
            C::StatusViaMainResource,
            C::SpecViaStatus,
            C::SameManagerApplyAndUpdate,
        ] {
            assert_eq!(entry(k.code()), (Mechanism::Fields, serde_name(&k).as_str()));
        }
        use StallKind as S;
        for k in [S::GenerationNotObserved, S::ReplicasShort, S::Unscheduled, S::NotStarted, S::StatusNotWritten] {
            assert_eq!(entry(k.code()), (Mechanism::Trace, serde_name(&k).as_str()));
        }
        assert_eq!(entry(LEADERLESS), (Mechanism::Leases, "leaderless"));
        assert_eq!(entry(SELECTORS_OVERLAP), (Mechanism::Overlaps, "selectors-overlap"));
        assert_eq!(entry(SEVERAL_DISRUPTION_BUDGETS), (Mechanism::Overlaps, "several-disruption-budgets"));
        assert_eq!(entry(ADOPTS_LIVE_PODS), (Mechanism::Overlaps, "adopts-live-pods"));
        assert_eq!(entry(APPLY_TAKES_FIELDS), (Mechanism::Fields, "apply-takes-fields"));
    }

    #[test]
    fn every_history_kind_has_a_listed_code_whose_reason_is_its_name() {
        for k in HistoryFinding::ALL {
            assert_eq!(entry(k.code()), (Mechanism::History, k.name()));
            assert_eq!(serde_name(&k), k.name());
        }
    }

    #[test]
    fn codes_are_unique_and_numbered_by_mechanism() {
        let mut seen = std::collections::BTreeSet::new();
        for (code, m, reason, _) in ALL {
            assert!(seen.insert(*code), "{code} twice");
            let hundreds = Mechanism::ALL.iter().position(|x| x == m).unwrap() + 1;
            assert!(code.starts_with(&format!("CO{hundreds}")), "{code} ({reason}) outside its mechanism's range");
            assert!(code.len() == 5 && code[2..].bytes().all(|b| b.is_ascii_digit()));
        }
        assert!(known("CO404") && !known("CO999") && !known("co404"));
    }

    #[test]
    fn the_check_page_lists_every_code() {
        let page = include_str!("../../docs/check.md");
        for (code, _, reason, _) in ALL {
            assert!(page.contains(&format!("| {code} | {reason} |")), "docs/check.md does not list {code} ({reason})");
        }
    }
}
