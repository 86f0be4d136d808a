//! `kubectl coord leases` against the real control plane: the real
//! kube-controller-manager, kube-scheduler and API server leases, leases held by
//! pods of a real Deployment (Running and Ready on kwok's nodes), every state, node
//! heartbeats renewed by kwok (and kwok frozen until they expire), and a real client-go
//! election between two processes.

mod common;

use std::process::{Command, Stdio};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use common::elector::Elector;
use common::{Cluster, cluster, lease_yaml};
use serde_json::Value;

const UUID: &str = "6c65e70f-c5d7-4c0c-b287-dfb5f5da81e7";

/// The test that freezes kwok takes this for writing; tests that read node leases or wait
/// for pods to run read it, so none sees a frozen kwok it did not expect.
static KWOK: RwLock<()> = RwLock::new(());

fn lease<'a>(report: &'a Value, ns: &str, name: &str) -> &'a Value {
    report["leases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["namespace"] == ns && l["name"] == name)
        .unwrap_or_else(|| panic!("no lease {ns}/{name} in {report:#}"))
}

#[test]
fn control_plane_and_apiserver_identity_leases() {
    let c = cluster();
    let run = c.coord("viewer", &["leases", "-n", "kube-system", "-o", "json"]).ok();
    let report = run.json();
    assert_eq!(report["kind"], "LeaseReport");
    assert_eq!(report["clock"], "server");
    for name in ["kube-controller-manager", "kube-scheduler"] {
        let l = lease(&report, "kube-system", name);
        assert_eq!(l["class"], "control-plane", "{l:#}");
        assert_eq!(l["state"], "fresh", "{l:#}");
        assert_eq!(l["leaseDurationSeconds"], 15);
        let holder = l["holder"].as_str().unwrap();
        assert!(holder.rsplit_once('_').is_some_and(|(_, uuid)| uuid.len() == 36), "{holder}");
        // The live value agrees with kubectl.
        let live =
            c.kubectl(&["-n", "kube-system", "get", "lease", name, "-o", "jsonpath={.spec.holderIdentity}"]).ok();
        assert_eq!(live.stdout, holder);
    }
    let identity: Vec<&Value> =
        report["leases"].as_array().unwrap().iter().filter(|l| l["class"] == "apiserver-identity").collect();
    assert_eq!(identity.len(), 1, "{report:#}");
    assert!(identity[0]["name"].as_str().unwrap().starts_with("apiserver-"));
    assert_eq!(identity[0]["leaseDurationSeconds"], 3600);

    let table = c.coord("viewer", &["leases", "-n", "kube-system"]).ok();
    let header = table.stdout.lines().next().unwrap();
    assert_eq!(header.split_whitespace().collect::<Vec<_>>(), ["NAME", "HOLDER", "RENEWED", "STATE"], "{header}");
    let kcm = table.stdout.lines().find(|l| l.starts_with("kube-controller-manager ")).unwrap();
    assert!(kcm.contains("fresh"), "{kcm}");
    // -o wide adds the lease's class, duration, transitions and acquisition.
    let wide = c.coord("viewer", &["leases", "-n", "kube-system", "-o", "wide"]).ok();
    let header = wide.stdout.lines().next().unwrap();
    for col in ["NAME", "HOLDER", "RENEWED", "STATE", "CLASS", "DURATION", "TRANSITIONS", "ACQUIRED", "POD"] {
        assert!(header.contains(col), "{header}");
    }
    let kcm = wide.stdout.lines().find(|l| l.starts_with("kube-controller-manager ")).unwrap();
    assert!(kcm.contains("control-plane") && kcm.contains("fresh") && kcm.contains("15s"), "{kcm}");
    let wide = c.coord("viewer", &["leases", "-A", "-o", "wide", "--no-headers"]).ok();
    assert!(!wide.stdout.contains("NAMESPACE"));
    assert!(
        wide.stdout.lines().any(|l| l.starts_with("kube-system ") && l.contains("kube-scheduler")),
        "{}",
        wide.stdout
    );
}

fn wait_for_pods(c: &Cluster, ns: &str, selector: &str, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let out =
            c.kubectl(&["-n", ns, "get", "pods", "-l", selector, "-o", "jsonpath={.items[*].metadata.name}"]).ok();
        let names: Vec<String> = out.stdout.split_whitespace().map(str::to_string).collect();
        if names.len() >= n {
            return names;
        }
        assert!(Instant::now() < deadline, "the Deployment controller made {} of {n} pods", names.len());
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn holder_resolves_to_pod_and_deployment_and_missing_pods_are_flagged() {
    let _kwok = KWOK.read().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let ns = "coord-leases-deploy";
    c.namespace(ns);
    c.apply(&format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: elect-app, namespace: {ns}}}\nspec:\n  replicas: 3\n  selector: {{matchLabels: {{app: elect-app}}}}\n  template:\n    metadata: {{labels: {{app: elect-app}}}}\n    spec: {{containers: [{{name: app, image: registry.k8s.io/pause:3.10}}]}}\n"
    ));
    // Pods made by the real Deployment and ReplicaSet controllers, bound by the real
    // scheduler to kwok's nodes, Running and Ready by kwok's stages.
    let pods = wait_for_pods(&c, ns, "app=elect-app", 3);
    common::wait_for("three Ready pods", 90, || {
        let ready = c
            .kubectl(&[
                "-n",
                ns,
                "get",
                "pods",
                "-l",
                "app=elect-app",
                "-o",
                r#"jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}"#,
            ])
            .ok()
            .stdout;
        ready.split_whitespace().filter(|s| *s == "True").count() == 3
    });
    c.apply(&lease_yaml(ns, "elect-app-lock", &format!("{}_{UUID}", pods[0]), 3600, Some(0), 2));
    c.apply(&lease_yaml(ns, "ghost-lock", &format!("ghost-pod-0_{UUID}"), 3600, Some(0), 0));

    let report = c.coord("viewer", &["leases", "-n", ns, "-o", "json"]).ok().json();
    let l = lease(&report, ns, "elect-app-lock");
    assert_eq!(l["class"], "leader-election");
    assert_eq!(l["state"], "fresh");
    assert_eq!(l["leaseTransitions"], 2);
    let pod = &l["holderPod"];
    assert_eq!(pod["name"], pods[0].as_str());
    assert_eq!(pod["exists"], true);
    assert_eq!(pod["phase"], "Running");
    assert_eq!(pod["ready"], true);
    assert_eq!(pod["controller"]["kind"], "Deployment");
    assert_eq!(pod["controller"]["name"], "elect-app");
    assert_eq!(pod["controller"]["replicas"], 3);
    let lead = &report["leadership"][0];
    assert_eq!(lead["workload"]["name"], "elect-app");
    assert_eq!(lead["leadingPods"], 1);

    let ghost = lease(&report, ns, "ghost-lock");
    assert_eq!(ghost["holderPod"]["exists"], false);
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0]["kind"], "holder-pod-missing");
    assert_eq!(findings[0]["name"], "ghost-lock");

    let table = c.coord("viewer", &["leases", "-n", ns, "-o", "wide"]).ok();
    assert!(table.stdout.contains("deployment/elect-app: 1/3 replicas lead"), "{}", table.stdout);
    assert!(table.stdout.contains(&format!("{} (ready)", pods[0])), "{}", table.stdout);
    assert!(table.stdout.contains("ghost-pod-0 (gone)"), "{}", table.stdout);
    assert!(table.stdout.contains("ghost-lock: CO104 holder-pod-missing"), "{}", table.stdout);
    c.coord("viewer", &["leases", "-n", ns, "--exit-code"]).code(3);
    c.coord("viewer", &["leases", "-n", ns, "elect-app-lock", "--exit-code"]).code(0);
}

#[test]
fn every_state_and_the_exit_code() {
    let c = cluster();
    let ns = "coord-leases-states";
    c.namespace(ns);
    for (name, holder, duration, offset) in [
        ("fresh", "Host-A_".to_string() + UUID, 300, Some(0)),
        ("at-risk", "Host-B_".to_string() + UUID, 300, Some(-250)),
        ("expired", "Host-C_".to_string() + UUID, 10, Some(-3600)),
        ("skewed", "Host-D_".to_string() + UUID, 300, Some(3600)),
        ("released", String::new(), 1, Some(-30)),
        ("no-times", "Host-E_".to_string() + UUID, 15, None),
    ] {
        c.apply(&lease_yaml(ns, name, &holder, duration, offset, 1));
    }
    let report = c.coord("viewer", &["leases", "-n", ns, "-o", "yaml"]).ok();
    assert!(report.stdout.contains("kind: LeaseReport"), "{}", report.stdout);
    let report = c.coord("viewer", &["leases", "-n", ns, "-o", "json"]).ok().json();
    for (name, state) in [
        ("fresh", "fresh"),
        ("at-risk", "at-risk"),
        ("expired", "expired"),
        ("skewed", "skewed"),
        ("released", "released"),
        ("no-times", "unknown"),
    ] {
        assert_eq!(lease(&report, ns, name)["state"], state, "{name}");
    }
    assert!(lease(&report, ns, "released")["holder"].is_null());
    let age = lease(&report, ns, "at-risk")["renewAgeSeconds"].as_f64().unwrap();
    assert!((249.0..280.0).contains(&age), "{age}");
    // Findings are sorted by namespace, name, kind. Holders are not pod names here, so
    // no pod is looked up or missed.
    let found: Vec<(&str, &str)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap(), f["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        found,
        vec![("at-risk", "at-risk"), ("expired", "expired"), ("skewed", "skewed")],
        "{:#}",
        report["findings"]
    );
    assert!(lease(&report, ns, "fresh")["holderPod"].is_null());

    c.coord("viewer", &["leases", "-n", ns, "--exit-code"]).code(3);
    c.coord("viewer", &["leases", "-n", ns, "fresh", "released", "--exit-code"]).code(0);
    // Without --exit-code findings do not change the exit status.
    c.coord("viewer", &["leases", "-n", ns]).ok();

    let table = c.coord("viewer", &["leases", "-n", ns, "--color", "always"]).ok();
    assert!(table.stdout.contains('\u{1b}'), "--color always must colour");
    let plain = c.coord("viewer", &["leases", "-n", ns]).ok();
    assert!(!plain.stdout.contains('\u{1b}'), "no colour off a terminal");
    let skewed = plain.stdout.lines().find(|l| l.starts_with("skewed ")).unwrap();
    // An hour ahead, less the test's own seconds: "in 59m" or, rounded, "in 60m" / "in 1h".
    assert!(["in 59m", "in 60m", "in 1h"].iter().any(|s| skewed.contains(s)), "{skewed}");
    assert!(plain.stdout.contains("skewed: CO103 skewed: renewTime is"), "{}", plain.stdout);
}

#[test]
fn node_heartbeats_are_summarised_and_listed_on_request() {
    let _kwok = KWOK.read().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    // kwok's nodes renew their own; these three are written by hand, for what kwok
    // cannot show: a heartbeat expired long ago, with and without its Node.
    let kwok: usize = c.env("NODES").parse().unwrap();
    c.apply("apiVersion: v1\nkind: Node\nmetadata: {name: coord-node-a}\n");
    c.apply(&lease_yaml("kube-node-lease", "coord-node-a", "coord-node-a", 40, Some(-600), 0));
    c.apply(&lease_yaml("kube-node-lease", "coord-node-b", "coord-node-b", 40, Some(-600), 0));
    c.apply(&lease_yaml("kube-node-lease", "coord-node-c", "coord-node-c", 40, Some(0), 0));

    let all = c.coord("viewer", &["leases", "-A"]).ok();
    assert!(!all.stdout.lines().any(|l| l.starts_with("kube-node-lease ")), "{}", all.stdout);
    let line = all.stdout.lines().find(|l| l.contains("node leases:")).unwrap_or_else(|| panic!("{}", all.stdout));
    let want = format!(
        "{} node leases: 2 expired, {} fresh: expired: coord-node-a, coord-node-b (node gone)",
        3 + kwok,
        1 + kwok
    );
    assert!(line.starts_with(&want), "{line}");

    let listed = c.coord("viewer", &["leases", "-A", "--nodes"]).ok();
    assert_eq!(
        listed.stdout.lines().filter(|l| l.starts_with("kube-node-lease ")).count(),
        3 + kwok,
        "{}",
        listed.stdout
    );
    let ns = c.coord("viewer", &["leases", "-n", "kube-node-lease", "-o", "json"]).ok().json();
    assert_eq!(ns["leases"].as_array().unwrap().len(), 3 + kwok);
    for i in 0..kwok {
        let l = lease(&ns, "kube-node-lease", &format!("kwok-node-{i}"));
        assert_eq!(
            (l["class"].as_str(), l["state"].as_str(), l["leaseDurationSeconds"].as_i64()),
            (Some("node-heartbeat"), Some("fresh"), Some(20)),
            "{l}"
        );
    }
    assert_eq!(lease(&ns, "kube-node-lease", "coord-node-a")["class"], "node-heartbeat");
    let expired = ns["nodeLeases"]["expired"].as_array().unwrap();
    assert_eq!(expired[0]["name"], "coord-node-a");
    assert_eq!(expired[0]["nodeExists"], true);
    assert_eq!(expired[1]["nodeExists"], false);
}

/// Thaws a stopped process however the test ends.
struct Thaw(i32);

impl Drop for Thaw {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-CONT", &self.0.to_string()]).status();
    }
}

/// kwok renews its nodes' heartbeat Leases every 5s (a 20s lease); frozen with SIGSTOP,
/// they go at-risk (renewed more than 2/3 of the duration ago), then expired, in
/// `leases --nodes`, and are fresh again once kwok runs.
#[test]
fn frozen_kwok_node_leases_go_at_risk_then_expired_then_recover() {
    let _kwok = KWOK.write().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let kwok: usize = c.env("NODES").parse().unwrap();
    assert!(kwok > 0, "the test cluster runs kwok with nodes");
    let states = || -> Vec<String> {
        let report = c.coord("viewer", &["leases", "-n", "kube-node-lease", "--nodes", "-o", "json"]).ok().json();
        report["leases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["name"].as_str().unwrap().starts_with("kwok-node-"))
            .map(|l| l["state"].as_str().unwrap().to_string())
            .collect()
    };
    common::wait_for("fresh kwok heartbeats", 30, || states().iter().filter(|s| *s == "fresh").count() == kwok);
    let pid: i32 = std::fs::read_to_string(c.dir.join("pids/kwok.pid")).unwrap().trim().parse().unwrap();
    assert!(Command::new("kill").args(["-STOP", &pid.to_string()]).status().unwrap().success());
    let thaw = Thaw(pid);
    let mut seen_at_risk = false;
    common::wait_for("every kwok heartbeat expired", 40, || {
        let now = states();
        seen_at_risk |= now.iter().any(|s| s == "at-risk");
        now.iter().all(|s| s == "expired")
    });
    assert!(seen_at_risk, "the leases went from fresh to expired without being seen at-risk");
    let text = c.coord("viewer", &["leases", "-n", "kube-node-lease", "--nodes"]).ok().stdout;
    assert!(text.lines().any(|l| l.starts_with("kwok-node-0 ") && l.ends_with(" expired")), "{text}");
    let summary = c.coord("viewer", &["leases", "-A", "--exit-code"]).code(3).stdout;
    assert!(summary.contains("kwok-node-0"), "the summary names the expired heartbeats: {summary}");
    drop(thaw);
    common::wait_for("kwok's heartbeats fresh again", 30, || states().iter().all(|s| s == "fresh"));
}

fn elector(c: &Cluster, ns: &str, identity: &str) -> Elector {
    common::elector::elector(c, ns, identity, ["6s", "4s", "1s"])
}

fn signal(e: &Elector, sig: &str) {
    assert!(Command::new("kill").args([sig, &e.child.id().to_string()]).status().unwrap().success());
}

/// Polls `leases` until `check` accepts the lease; returns it.
fn poll(c: &Cluster, ns: &str, what: &str, limit: Duration, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let run = c.coord("viewer", &["leases", "-n", ns, "-o", "json"]).ok();
        let report = run.json();
        let l = report["leases"].as_array().unwrap().iter().find(|l| l["name"] == "elect").cloned();
        if let Some(l) = &l
            && check(l)
        {
            return l.clone();
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}: {l:#?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn real_client_go_election_one_leader_then_expiry_then_takeover() {
    let c = cluster();
    let ns = "coord-leases-elect";
    c.namespace(ns);
    let a = elector(&c, ns, &format!("elector-a_{UUID}"));
    let b = elector(&c, ns, &format!("elector-b_{}", UUID.replace('6', "7")));
    let first = poll(&c, ns, "a leader", Duration::from_secs(30), |l| l["state"] == "fresh" && l["holder"].is_string());
    let holder = first["holder"].as_str().unwrap().to_string();
    assert!(holder == a.identity || holder == b.identity, "{holder}");
    assert_eq!(first["class"], "leader-election");
    let transitions = first["leaseTransitions"].as_i64().unwrap();
    // Exactly one holder, and it keeps renewing.
    std::thread::sleep(Duration::from_secs(3));
    let again = poll(&c, ns, "renewal", Duration::from_secs(10), |l| l["state"] == "fresh");
    assert_eq!(again["holder"], holder.as_str());

    // A watcher that sees it all, on watches the server closes every 3s.
    let watcher = Command::new(env!("CARGO_BIN_EXE_kubectl-coord"))
        .args([
            "leases",
            "-n",
            ns,
            "elect",
            "--watch",
            "--watch-timeout",
            "90s",
            "-o",
            "json",
            "--watch-server-timeout",
            "3",
        ])
        .env("KUBECONFIG", c.kubeconfig("viewer"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let (leader, follower) = if holder == a.identity { (a, b) } else { (b, a) };
    // Freeze the follower so the lease's decay can be watched step by step, then kill the leader.
    signal(&follower, "-STOP");
    signal(&leader, "-KILL");
    let risky = poll(&c, ns, "at-risk", Duration::from_secs(15), |l| l["state"] != "fresh");
    assert_eq!(risky["state"], "at-risk", "{risky:#}");
    let gone = poll(&c, ns, "expired", Duration::from_secs(15), |l| l["state"] == "expired");
    assert_eq!(gone["holder"], holder.as_str());
    c.coord("viewer", &["leases", "-n", ns, "--exit-code"]).code(3);
    signal(&follower, "-CONT");
    let taken = poll(&c, ns, "takeover", Duration::from_secs(30), |l| {
        l["holder"] == follower.identity.as_str() && l["state"] == "fresh"
    });
    assert_eq!(taken["leaseTransitions"].as_i64().unwrap(), transitions + 1, "{taken:#}");
    std::thread::sleep(Duration::from_secs(2));
    assert!(Command::new("kill").args(["-INT", &watcher.id().to_string()]).status().unwrap().success());
    let out = watcher.wait_with_output().unwrap();
    assert!(out.status.success(), "watch ended badly: {}", String::from_utf8_lossy(&out.stderr));
    let events: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "added").count(), 1, "reopened watches repeat nothing: {kinds:?}");
    let pos = |k: &str| kinds.iter().position(|x| *x == k).unwrap_or_else(|| panic!("no {k} in {kinds:?}"));
    assert!(
        pos("renewed") < pos("at-risk") && pos("at-risk") < pos("expired") && pos("expired") < pos("leader-changed"),
        "{kinds:?}"
    );
    let change = &events[pos("leader-changed")];
    assert_eq!(change["from"], holder.as_str());
    assert_eq!(change["to"], follower.identity.as_str());
    assert_eq!(change["transitions"].as_i64().unwrap(), transitions + 1);
    let renewal = events.iter().filter(|e| e["event"] == "renewed").find_map(|e| e["intervalSeconds"].as_f64());
    assert!(renewal.is_some_and(|s| (0.5..3.0).contains(&s)), "renewals every ~1s: {renewal:?}");
    drop(leader);
}

#[test]
fn limited_rights_and_bad_input() {
    let c = cluster();
    let ns = c.limited_namespace();
    let run = c.coord("limited", &["leases"]).ok();
    assert_eq!(run.stdout, format!("No leases found in {ns} namespace.\n"));
    // Listing across all namespaces is forbidden for this user, and so is listing the
    // namespaces: -A reads the context's namespace and says so.
    c.apply(&common::lease_yaml(&ns, "limited-lock", "someone", 30, Some(0), 0));
    let run = c.coord("limited", &["leases", "-A"]).ok();
    assert!(run.stdout.contains("limited-lock"), "{}", run.stdout);
    assert!(
        run.stderr.contains(&format!(
            "leases: listing across all namespaces is forbidden; read namespace by namespace: {ns} (the context's namespace; namespaces may not be listed)"
        )),
        "{}",
        run.stderr
    );
    c.kubectl(&["-n", &ns, "delete", "lease", "limited-lock"]).ok();
    let run = c.coord("viewer", &["leases", "-n", "kube-system", "-l", "a in ("]).code(2);
    run.one_line_error("invalid -l selector");
    let run = c.coord("viewer", &["leases", "-n", "kube-system", "no-such-lease"]).code(1);
    run.one_line_error("lease no-such-lease not found in namespace \"kube-system\"");
}
