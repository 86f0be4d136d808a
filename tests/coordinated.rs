//! `leases` against coordinated leader election, on the second control plane tests/run.sh
//! starts with the CoordinatedLeaderElection feature gate and coordination.k8s.io/v1beta1
//! (the LeaseCandidate version v1.36 serves, found by discovery): the real
//! kube-controller-manager and kube-scheduler as candidates, elected by the API server's own
//! election controller; then LeaseCandidates written by this test (no process renews them)
//! that the same controller elects among, pings, and marks with a preferred holder. Every
//! finding below is on objects the server wrote; only the candidates are hand-written.

mod common;

use common::{Cluster, cluster2, micro_time, wait_for};
use serde_json::Value;

fn coordinated() -> Cluster {
    let c = cluster2();
    assert_eq!(c.env("COORDINATED"), "true", "the second test cluster runs coordinated leader election");
    c
}

fn candidate(ns: &str, name: &str, lease: &str, emulation: &str, strategy: &str) -> String {
    format!(
        "apiVersion: coordination.k8s.io/v1beta1\nkind: LeaseCandidate\nmetadata: {{name: {name}, namespace: {ns}}}\nspec: {{leaseName: {lease}, binaryVersion: \"1.36.0\", emulationVersion: \"{emulation}\", strategy: {strategy}, renewTime: \"{}\"}}\n---\n",
        micro_time(0)
    )
}

fn lease<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["leases"].as_array().unwrap().iter().find(|l| l["name"] == name).unwrap_or_else(|| panic!("{report:#}"))
}

fn findings(report: &Value, lease: &str) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"] == lease)
        .map(|f| (f["kind"].as_str().unwrap().to_string(), f["message"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn the_control_plane_is_elected_by_the_api_server() {
    let c = coordinated();
    let report = c.coord("viewer", &["leases", "-n", "kube-system", "-o", "json"]).ok().json();
    for name in ["kube-controller-manager", "kube-scheduler"] {
        let l = lease(&report, name);
        assert_eq!(l["class"], "coordinated", "{l:#}");
        assert_eq!(l["strategy"], "OldestEmulationVersion", "{l:#}");
        assert_eq!(l["state"], "fresh", "{l:#}");
        let candidates = l["candidates"].as_array().unwrap();
        assert!(!candidates.is_empty(), "{l:#}");
        assert!(candidates.iter().any(|c| c["name"] == l["holder"]), "the holder is one of the candidates: {l:#}");
        assert!(candidates.iter().all(|c| c["binaryVersion"] == "1.36.3"), "{l:#}");
        assert!(findings(&report, name).is_empty(), "{:?}", findings(&report, name));
    }
    let wide = c.coord("viewer", &["leases", "-n", "kube-system", "-o", "wide"]).ok().stdout;
    let kcm = wide.lines().find(|l| l.starts_with("kube-controller-manager ")).unwrap_or_else(|| panic!("{wide}"));
    assert!(kcm.contains("OldestEmulationVersion") && kcm.contains(" coordinated "), "{wide}");
}

#[test]
fn hand_written_candidates_are_elected_pinged_and_judged() {
    let c = coordinated();
    let ns = c.fresh_namespace("coord-cle");
    // Two candidates for one lease: the server elects the oldest emulation version.
    c.apply(&format!(
        "{}{}",
        candidate(&ns, "app-old", "app-lock", "1.35.0", "OldestEmulationVersion"),
        candidate(&ns, "app-new", "app-lock", "1.36.0", "OldestEmulationVersion")
    ));
    // Two that disagree on the strategy.
    c.apply(&format!(
        "{}{}",
        candidate(&ns, "other-a", "other-lock", "1.36.0", "OldestEmulationVersion"),
        candidate(&ns, "other-b", "other-lock", "1.36.0", "example.com/Custom")
    ));
    // One alone, then an older one joins: the server names it the preferred holder.
    c.apply(&candidate(&ns, "solo-new", "solo-lock", "1.36.0", "OldestEmulationVersion"));
    let holder = |lease: &str| {
        c.kubectl(&["-n", &ns, "get", "lease", lease, "-o", "jsonpath={.spec.holderIdentity}"])
            .stdout
            .trim()
            .to_string()
    };
    wait_for("the server to elect the three leases", 60, || {
        holder("app-lock") == "app-old" && holder("other-lock") == "other-a" && holder("solo-lock") == "solo-new"
    });
    c.apply(&candidate(&ns, "solo-old", "solo-lock", "1.35.0", "OldestEmulationVersion"));
    wait_for("the server to ping the candidates and prefer solo-old", 60, || {
        let pinged = c
            .kubectl(&["-n", &ns, "get", "leasecandidates", "-o", "jsonpath={.items[*].spec.pingTime}"])
            .ok()
            .stdout
            .split_whitespace()
            .count();
        let preferred =
            c.kubectl(&["-n", &ns, "get", "lease", "solo-lock", "-o", "jsonpath={.spec.preferredHolder}"]).ok().stdout;
        pinged >= 4 && preferred == "solo-old"
    });

    let report = c.coord("viewer", &["leases", "-n", &ns, "-o", "json"]).ok().json();
    let app = lease(&report, "app-lock");
    assert_eq!((app["class"].as_str(), app["holder"].as_str()), (Some("coordinated"), Some("app-old")));
    assert_eq!(app["candidates"].as_array().unwrap().len(), 2);
    let unanswered: Vec<String> = findings(&report, "app-lock")
        .into_iter()
        .filter(|(k, _)| k == "candidate-unanswered")
        .map(|(_, m)| m)
        .collect();
    assert!(unanswered.iter().any(|m| m.contains("app-old")), "nobody answers the server's pings: {unanswered:?}");
    let other = findings(&report, "other-lock");
    assert!(other.iter().any(|(k, m)| k == "strategy-disagreement" && m.contains("example.com/Custom")), "{other:?}");
    assert_eq!(lease(&report, "solo-lock")["preferredHolder"], "solo-old");
    let wide = c.coord("viewer", &["leases", "-n", &ns, "-o", "wide"]).ok().stdout;
    let solo = wide.lines().find(|l| l.starts_with("solo-lock ")).unwrap_or_else(|| panic!("{wide}"));
    assert!(solo.contains("solo-old") && solo.trim_end().ends_with('2'), "preferred holder and 2 candidates: {wide}");

    // The holder's candidate goes away: the lease still names it, no longer a candidate.
    c.kubectl(&["-n", &ns, "delete", "leasecandidate", "app-old"]).ok();
    // Whatever the server does next, the finding must say what the server holds.
    let before = holder("app-lock");
    let report = c.coord("viewer", &["leases", "-n", &ns, "-o", "json"]).ok().json();
    let after = holder("app-lock");
    let flagged = findings(&report, "app-lock").iter().any(|(k, _)| k == "holder-not-candidate");
    if before == after {
        assert_eq!(flagged, after == "app-old", "holder {after}: {:?}", findings(&report, "app-lock"));
    }
    c.coord("viewer", &["leases", "-n", &ns, "--exit-code"]).code(3);
}
