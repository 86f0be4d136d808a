//! One machine-output contract: every report any command prints with -o json (and the
//! same as YAML) carries apiVersion coord.kubectl.io/v1alpha1, its kind, `complete`, and
//! `skipped` as {resource, namespace?, reason} objects, plus serverTime wherever the command
//! read the server's clock; partial access fills `skipped` and clears `complete` alike in
//! every command.

mod common;

use common::{Cluster, cluster};
use serde_json::Value;

const API_VERSION: &str = "coord.kubectl.io/v1alpha1";

/// Checks the envelope of one report and the report against its published JSON Schema;
/// returns its skipped entries.
#[track_caller]
fn envelope(args: &[&str], report: &Value, kind: &str, server_time: bool) -> Vec<Value> {
    common::schema::conforms(report);
    assert_eq!(report["apiVersion"], API_VERSION, "{args:?}");
    assert_eq!(report["kind"], kind, "{args:?}");
    let skipped =
        report["skipped"].as_array().unwrap_or_else(|| panic!("{args:?}: no skipped list: {report:#}")).clone();
    for s in &skipped {
        let o = s.as_object().unwrap_or_else(|| panic!("{args:?}: a skipped entry is not an object: {s}"));
        assert!(o["resource"].is_string() && o["reason"].is_string(), "{args:?}: {s}");
        assert!(o.get("namespace").is_none_or(Value::is_string), "{args:?}: {s}");
        assert!(o.keys().all(|k| ["resource", "namespace", "reason"].contains(&k.as_str())), "{args:?}: {s}");
    }
    assert_eq!(
        report["complete"],
        skipped.is_empty(),
        "{args:?}: complete must be false exactly when something was skipped"
    );
    if server_time {
        let t = report["serverTime"].as_str().unwrap_or_else(|| panic!("{args:?}: no serverTime"));
        assert!(t.parse::<jiff::Timestamp>().is_ok(), "{args:?}: {t}");
    }
    skipped
}

fn json(c: &Cluster, who: &str, args: &[&str]) -> Value {
    let mut full = args.to_vec();
    full.extend(["-o", "json"]);
    c.coord(who, &full).ok().json()
}

#[test]
fn every_report_carries_the_same_envelope() {
    let c = cluster();
    // A workload with a full tree (Deployment, ReplicaSet, pods on kwok nodes) and an
    // overlapping twin, so that every optional part of the reports is filled in somewhere.
    c.namespace("coord-contract");
    c.apply(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: coredns-like, namespace: coord-contract}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: dns}}\n  template:\n    metadata: {labels: {app: dns}}\n    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.10}]}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: twin, namespace: coord-contract}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: dns}}\n  template:\n    metadata: {labels: {app: dns, extra: x}}\n    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.10}]}\n",
    );
    c.kubectl(&["-n", "coord-contract", "rollout", "status", "deploy/coredns-like", "--timeout=60s"]).ok();
    let ns = "kube-system";
    let cases: Vec<(Vec<&str>, &str, bool)> = vec![
        (vec!["version"], "VersionReport", true),
        (vec!["leases", "-A"], "LeaseReport", true),
        (vec!["owners", "lease/kube-scheduler", "-n", ns], "OwnerGraph", true),
        (vec!["owners", "--all", "-n", ns], "OwnerScan", true),
        (vec!["overlaps", "-A"], "OverlapReport", true),
        (vec!["fields", "lease/kube-scheduler", "-n", ns], "FieldReport", true),
        (vec!["fields", "-n", ns], "FieldCensus", true),
        (vec!["trace", "lease/kube-scheduler", "-n", ns], "Trace", true),
        (vec!["check", "-n", ns], "CheckReport", true),
        (vec!["check", "-A"], "CheckReport", true),
        (vec!["owners", "deploy/coredns-like", "-n", "coord-contract"], "OwnerGraph", true),
        (vec!["trace", "deploy/coredns-like", "-n", "coord-contract"], "Trace", true),
        (vec!["fields", "deploy/coredns-like", "-n", "coord-contract"], "FieldReport", true),
        (vec!["overlaps", "-n", "coord-contract"], "OverlapReport", true),
    ];
    for (args, kind, server_time) in &cases {
        let report = json(&c, "viewer", args);
        let skipped = envelope(args, &report, kind, *server_time);
        // The validator is strict enough to notice a broken contract.
        let mut broken = report.clone();
        broken.as_object_mut().unwrap().remove("complete");
        broken["serverTime"] = Value::from("yesterday");
        assert_eq!(common::schema::violations(&broken).len(), 2, "{args:?}");
        assert!(skipped.is_empty(), "{args:?}: the viewer reads everything: {skipped:?}");
        // YAML is the same document.
        let mut yaml_args = args.clone();
        yaml_args.extend(["-o", "yaml"]);
        let yaml = c.coord("viewer", &yaml_args).ok().stdout;
        assert!(
            yaml.contains(&format!("apiVersion: {API_VERSION}")) && yaml.contains(&format!("kind: {kind}")),
            "{yaml}"
        );
        assert!(yaml.contains("complete: true") && yaml.contains("skipped: []"), "{args:?}:\n{yaml}");
    }
}

/// A fleet run is one FleetReport whose items are each context's own report plus `context`.
#[test]
fn a_fleet_report_and_its_items_follow_their_schemas() {
    let c = cluster();
    for args in [vec!["leases", "-A", "--all-contexts"], vec!["check", "-n", "kube-system", "--all-contexts"]] {
        let report = json(&c, "viewer", &args);
        common::schema::conforms(&report);
        let items = report["items"].as_array().unwrap_or_else(|| panic!("{args:?}: {report:#}"));
        assert_eq!(items.len(), 1, "{args:?}: the viewer's kubeconfig has one context");
        assert!(items[0]["context"].is_string(), "{args:?}: {report:#}");
        envelope(&args, &items[0], if args[0] == "leases" { "LeaseReport" } else { "CheckReport" }, true);
    }
}

#[test]
fn partial_access_is_skipped_alike_everywhere() {
    let c = cluster();
    // The limited user reads one namespace: every -A command falls back to it and says so
    // in the same shape.
    for (args, kind) in [
        (vec!["leases", "-A"], "LeaseReport"),
        (vec!["overlaps", "-A"], "OverlapReport"),
        (vec!["fields", "-A"], "FieldCensus"),
        (vec!["owners", "--all", "-A"], "OwnerScan"),
        (vec!["check", "-A"], "CheckReport"),
    ] {
        let report = json(&c, "limited", &args);
        let skipped = envelope(&args, &report, kind, true);
        assert!(!skipped.is_empty(), "{args:?}: {report:#}");
        assert!(skipped.iter().any(|s| s["reason"].as_str().unwrap().contains("forbidden")), "{args:?}: {skipped:#?}");
    }
}
