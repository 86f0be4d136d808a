//! Fleets: two real local control planes started side by side by tests/run.sh, in one
//! merged kubeconfig (KUBECONFIG with several files) with a third context whose server is
//! a closed port. Each cluster's own findings are attributed to its context, the dead one
//! is an error row, and the contexts are read at once: behind toxiproxy's latency the
//! fleet takes about as long as its slower cluster, not the sum.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::toxiproxy::Toxiproxy;
use common::{Cluster, Run, cluster, cluster2, lease_yaml};
use serde_json::Value;

/// `c`'s viewer kubeconfig with its cluster, user and context all called `name`,
/// pointed at `server` when given.
fn renamed(c: &Cluster, name: &str, server: Option<String>, tag: &str) -> PathBuf {
    let mut text = std::fs::read_to_string(c.kubeconfig("viewer"))
        .unwrap()
        .replace("coord-local", name)
        .replace("coord-viewer", name);
    if let Some(s) = server {
        text = text.replace(&c.env("SERVER"), &s);
    }
    let path = c.dir.join(format!("fleet-{tag}-{name}.kubeconfig"));
    std::fs::write(&path, text).unwrap();
    path
}

fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// KUBECONFIG naming three files: contexts one, two and dead.
fn fleet(a: &Cluster, b: &Cluster, tag: &str, servers: [Option<String>; 2]) -> String {
    let [sa, sb] = servers;
    let files = [
        renamed(a, "one", sa, tag),
        renamed(b, "two", sb, tag),
        renamed(a, "dead", Some(format!("https://127.0.0.1:{}", closed_port())), tag),
    ];
    std::env::join_paths(files).unwrap().into_string().unwrap()
}

fn coord(kubeconfig: &str, args: &[&str]) -> Run {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
    cmd.args(args).env("KUBECONFIG", kubeconfig);
    Run::of(cmd)
}

fn item<'a>(report: &'a Value, context: &str) -> &'a Value {
    report["items"].as_array().unwrap().iter().find(|i| i["context"] == context).unwrap()
}

fn lease_findings(item: &Value) -> Vec<String> {
    item["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["mechanism"] == "leases")
        .map(|f| f["object"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn each_clusters_findings_under_its_context_and_a_dead_one_as_an_error_row() {
    let (a, b) = (cluster(), cluster2());
    let (ns_a, ns_b) = (a.fresh_namespace("fleet-one"), b.fresh_namespace("fleet-two"));
    a.apply(&lease_yaml(&ns_a, "only-in-one", "gone-host_1", 15, Some(-600), 0));
    b.apply(&lease_yaml(&ns_b, "only-in-two", "gone-host_2", 15, Some(-600), 0));
    let kubeconfig = fleet(&a, &b, "check", [None, None]);

    let report = coord(&kubeconfig, &["check", "-A", "--only", "leases", "--all-contexts", "-o", "json"]).ok().json();
    assert_eq!(report["kind"], "FleetReport");
    let contexts: Vec<&str> =
        report["items"].as_array().unwrap().iter().map(|i| i["context"].as_str().unwrap()).collect();
    assert_eq!(contexts, ["one", "two", "dead"]);
    let (one, two) = (lease_findings(item(&report, "one")), lease_findings(item(&report, "two")));
    assert!(one.contains(&"lease/only-in-one".into()) && !one.contains(&"lease/only-in-two".into()), "{one:?}");
    assert!(two.contains(&"lease/only-in-two".into()) && !two.contains(&"lease/only-in-one".into()), "{two:?}");
    assert_eq!(item(&report, "one")["kind"], "CheckReport");
    let dead = item(&report, "dead");
    assert!(dead["error"].as_str().unwrap().contains("127.0.0.1"), "{dead}");
    assert!(dead.get("findings").is_none());

    // The table: CONTEXT first, each cluster's rows, the dead context as its error.
    let run = coord(&kubeconfig, &["check", "-A", "--only", "leases", "--all-contexts"]).ok();
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("CONTEXT ") && lines[0].contains("SEVERITY"), "{}", run.stdout);
    assert!(lines.iter().any(|l| l.starts_with("one ") && l.contains("lease/only-in-one")), "{}", run.stdout);
    assert!(lines.iter().any(|l| l.starts_with("two ") && l.contains("lease/only-in-two")), "{}", run.stdout);
    assert!(lines.iter().any(|l| l.starts_with("one: leases: ")), "{}", run.stdout);
    assert!(lines.iter().any(|l| l.starts_with("dead: error: ")), "{}", run.stdout);
    assert!(run.stderr.contains("warning: dead: "), "{}", run.stderr);

    // Exit codes: findings anywhere give 3 with --exit-code; no readable context gives 1.
    coord(&kubeconfig, &["check", "-A", "--only", "leases", "--all-contexts", "--exit-code"]).code(3);
    let none = coord(&kubeconfig, &["leases", "--contexts", "dead"]).code(1);
    assert!(none.stdout.starts_with("dead: error: "), "{}", none.stdout);

    // JUnit over the fleet: one document, suites named per context.
    let xml =
        coord(&kubeconfig, &["check", "-A", "--only", "leases", "--contexts", "one,two", "-o", "junit"]).ok().stdout;
    assert_eq!(xml.matches("<?xml").count(), 1, "{xml}");
    assert!(xml.contains("<testsuite name=\"one/leases\"") && xml.contains("<testsuite name=\"two/leases\""), "{xml}");
}

#[test]
fn every_fleet_command_gains_a_context_column_and_a_fleet_report() {
    let (a, b) = (cluster(), cluster2());
    let kubeconfig = fleet(&a, &b, "commands", [None, None]);
    let version = coord(&kubeconfig, &["version", "--contexts", "/^(one|two)$/", "-o", "json"]).ok().json();
    let servers: Vec<&str> =
        version["items"].as_array().unwrap().iter().map(|i| i["connection"]["server"].as_str().unwrap()).collect();
    assert_eq!(servers, [a.env("SERVER"), b.env("SERVER")]);
    assert_eq!(version["items"][0]["connection"]["user"]["username"], "coord-viewer");
    for args in [
        vec!["version"],
        vec!["leases", "-n", "kube-system"],
        vec!["owners", "--all", "-n", "kube-system"],
        vec!["overlaps", "-A"],
        vec!["fields", "-n", "kube-system"],
        vec!["check", "-n", "kube-system"],
    ] {
        let mut full = args.clone();
        full.extend(["--contexts", "one,two"]);
        let run = coord(&kubeconfig, &full).ok();
        let first = run.stdout.lines().next().unwrap_or_default();
        let has_rows =
            run.stdout.lines().any(|l| l.starts_with("one ")) && run.stdout.lines().any(|l| l.starts_with("two "));
        let has_lines =
            run.stdout.lines().any(|l| l.starts_with("one: ")) && run.stdout.lines().any(|l| l.starts_with("two: "));
        assert!((first.starts_with("CONTEXT ") && has_rows) || has_lines, "{args:?}:\n{}", run.stdout);
        full.extend(["-o", "yaml"]);
        let yaml = coord(&kubeconfig, &full).ok().stdout;
        assert!(yaml.contains("kind: FleetReport") && yaml.contains("context: two"), "{args:?}:\n{yaml}");
    }
}

#[test]
fn contexts_are_read_at_once() {
    let (a, b) = (cluster(), cluster2());
    let toxi = Toxiproxy::start(&a.bin());
    let via_a = toxi.proxy("fleet-a", a.api_addr(), 150);
    let via_b = toxi.proxy("fleet-b", b.api_addr(), 150);
    let kubeconfig = fleet(&a, &b, "timing", [Some(format!("https://{via_a}")), Some(format!("https://{via_b}"))]);
    let timed = |contexts: &str| {
        let start = Instant::now();
        coord(&kubeconfig, &["check", "-n", "kube-system", "--contexts", contexts, "-o", "json"]).ok();
        start.elapsed()
    };
    // Each alone, then both: the round trips to both overlap.
    let (one, two, both) = (timed("one"), timed("two"), timed("one,two"));
    eprintln!("one {one:?}, two {two:?}, both {both:?}");
    assert!(
        one > Duration::from_millis(900) && two > Duration::from_millis(900),
        "latency not applied: {one:?} {two:?}"
    );
    assert!(both < (one + two).mul_f64(0.75), "one {one:?} + two {two:?}, both {both:?}");
}

#[test]
fn fleet_flags_are_checked() {
    let (a, b) = (cluster(), cluster2());
    let kubeconfig = fleet(&a, &b, "flags", [None, None]);
    coord(&kubeconfig, &["leases", "--contexts", "nope"])
        .code(2)
        .one_line_error("context \"nope\" not found in the kubeconfig");
    coord(&kubeconfig, &["leases", "--contexts", "/^z/"]).code(2).one_line_error("matches none");
    coord(&kubeconfig, &["leases", "--contexts", "one", "--context", "two"])
        .code(2)
        .one_line_error("cannot be used with");
    coord(&kubeconfig, &["trace", "deploy/x", "--all-contexts"]).code(2).one_line_error("work with check, leases");
    coord(&kubeconfig, &["owners", "deploy/x", "--all-contexts"]).code(2).one_line_error("owners --all");
    coord(&kubeconfig, &["leases", "--all-contexts", "--max-parallel", "0"]).code(2).one_line_error("--max-parallel");
}
