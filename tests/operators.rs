//! A real cluster: the third control plane tests/run.sh starts with `up.sh --operators`,
//! where metrics-server serves a real aggregated API and the KEDA operator and argo-rollouts'
//! controller run with their own CRDs, RBAC and leader election, and nothing is broken on
//! purpose. What `check` says there must be true, an API that goes down must not stop a
//! command, and a finding a team accepted must be silenced.
//!
//! The tests share one cluster and change it (stop metrics-server, add a broken CRD, start a
//! fight over replicas), so they take turns: each holds [`TURN`] and leaves the cluster as
//! it found it.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard, Once};

use common::{Cluster, Run, cluster3, wait_for};
use serde_json::Value;

static TURN: Mutex<()> = Mutex::new(());
static EXAMPLES: Once = Once::new();

/// The cluster, its turn taken, with examples/operators applied and Ready.
fn turn() -> (Cluster, MutexGuard<'static, ()>) {
    let guard = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let c = cluster3();
    EXAMPLES.call_once(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/operators");
        c.kubectl(&["apply", "-f", dir.to_str().unwrap()]).ok();
        let jsonpath = |kind: &str, path: &str| {
            c.kubectl(&["-n", "coord-operators", "get", kind, "-o", &format!("jsonpath={path}")]).stdout
        };
        wait_for("the ScaledObject Ready", 120, || {
            jsonpath("scaledobject/worker", r#"{.status.conditions[?(@.type=="Ready")].status}"#) == "True"
        });
        wait_for("the HPA to scale worker to minReplicaCount (2)", 120, || {
            jsonpath("deployment/worker", "{.status.availableReplicas}") == "2"
        });
        wait_for("the Rollout Healthy", 120, || jsonpath("rollout/storefront", "{.status.phase}") == "Healthy");
        wait_for("the Rollout's ReplicaSet ready", 120, || {
            jsonpath("rollout/storefront", "{.status.availableReplicas}") == "2"
        });
    });
    (c, guard)
}

/// kubectl coord, through kubectl's plugin discovery, as the read-only viewer.
fn coord(c: &Cluster, args: &[&str]) -> Run {
    c.kubectl_plugin("viewer", args)
}

fn write(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("coord-operators-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_healthy_cluster_running_real_operators_gets_no_finding() {
    let (c, _turn) = turn();
    // Every finding, infos too: on this cluster there is none to name. A warning found here
    // must be added below with the reason it is true of these operators, or fixed.
    let report = coord(&c, &["check", "-A", "--min-severity", "info", "-o", "json"]).ok().json();
    common::schema::conforms(&report);
    let findings = report["findings"].as_array().unwrap();
    let known: &[(&str, &str, &str)] = &[];
    let unexplained: Vec<&Value> = findings
        .iter()
        .filter(|f| !known.iter().any(|(code, object, _why)| f["code"] == *code && f["object"] == *object))
        .collect();
    assert!(unexplained.is_empty(), "findings on a healthy cluster: {unexplained:#?}");
    assert_eq!(report["complete"], true, "skipped: {}", report["skipped"]);
    // It read what the operators made: their CRDs' objects and what they own.
    let owners = report["mechanisms"].as_array().unwrap().iter().find(|m| m["name"] == "owners").unwrap();
    for kind in ["ScaledObject", "Rollout", "HorizontalPodAutoscaler", "APIService", "ReplicaSet"] {
        assert!(owners["checked"][kind].as_u64().unwrap_or(0) >= 1, "owners did not check a {kind}: {owners}");
    }
    let table = coord(&c, &["check", "-A", "--exit-code"]).ok();
    assert!(table.stdout.ends_with("0 findings at or above warning\n"), "{}", table.stdout);
    assert!(table.stderr.is_empty(), "{}", table.stderr);
}

#[test]
fn each_operators_lease_names_its_pod_and_deployment() {
    let (c, _turn) = turn();
    let report = coord(&c, &["leases", "-A", "-o", "json"]).ok().json();
    for (ns, lease, pod, deployment) in [
        ("keda", "operator.keda.sh", c.operators_env("KEDA_POD"), "keda-operator"),
        ("argo-rollouts", "argo-rollouts-controller-lock", c.operators_env("ROLLOUTS_POD"), "argo-rollouts"),
    ] {
        let l = report["leases"].as_array().unwrap().iter().find(|l| l["namespace"] == ns && l["name"] == lease);
        let l = l.unwrap_or_else(|| panic!("no lease {ns}/{lease}: {report}"));
        assert_eq!(l["state"], "fresh", "{l}");
        assert!(l["holder"].as_str().unwrap().starts_with(&format!("{pod}_")), "{l}");
        let holder = &l["holderPod"];
        assert_eq!((holder["name"].as_str(), &holder["exists"]), (Some(pod.as_str()), &Value::Bool(true)), "{l}");
        assert_eq!(holder["controller"]["kind"], "Deployment", "{l}");
        assert_eq!(holder["controller"]["name"], deployment, "{l}");
    }
    assert!(report["findings"].as_array().unwrap().is_empty(), "{}", report["findings"]);
}

#[test]
fn owners_trace_and_fields_show_what_each_operator_drives() {
    let (c, _turn) = turn();
    let ns = ["-n", "coord-operators"];
    // argo-rollouts: the Rollout owns its ReplicaSet, which owns the pods.
    let tree = coord(&c, &[&["owners", "rollout/storefront", "-o", "json"][..], &ns[..]].concat()).ok().json();
    let text = tree.to_string();
    assert!(text.contains("\"ReplicaSet\"") && text.matches("\"Pod\"").count() >= 2, "{tree}");
    let trace = coord(&c, &[&["trace", "rollout/storefront", "-o", "json"][..], &ns[..]].concat()).ok().json();
    let hops = trace["hops"].as_array().unwrap();
    let hop = |reference_prefix: &str, kind: &str| {
        hops.iter()
            .find(|h| h["ref"].as_str().unwrap().starts_with(reference_prefix) && h["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} hop on {reference_prefix}: {trace}"))
    };
    assert_eq!(hop("rollout.argoproj.io/storefront", "created")["writer"], "kubectl-client-side-apply");
    assert!(
        hop("replicaset.apps/storefront-", "created")["writer"].as_str().unwrap().starts_with("rollouts-controller")
    );
    assert_eq!(hop("rollout.argoproj.io/storefront", "status")["writer"], "rollouts-controller (status)");
    assert!(trace["stalls"].as_array().unwrap().is_empty(), "{}", trace["stalls"]);
    // Its Services' selectors are the controller's now: it added its pod-template hash.
    let fields = coord(&c, &[&["fields", "svc/storefront-stable", "-o", "json"][..], &ns[..]].concat()).ok().json();
    let selector = fields["objects"][0]["fields"].as_array().unwrap().iter().find(|f| f["path"] == ".spec.selector");
    let selector = selector.unwrap_or_else(|| panic!("{fields}"));
    assert_eq!(selector["owners"][0]["manager"], "rollouts-controller");
    assert!(selector["value"]["rollouts-pod-template-hash"].is_string(), "{selector}");

    // KEDA: the ScaledObject (applied by kubectl) owns the HPA keda-operator made.
    let trace = coord(&c, &[&["trace", "scaledobject/worker", "-o", "json"][..], &ns[..]].concat()).ok().json();
    let hops = trace["hops"].as_array().unwrap();
    let created = |prefix: &str| {
        hops.iter().find(|h| h["ref"].as_str().unwrap().starts_with(prefix) && h["kind"] == "created").cloned()
    };
    assert_eq!(created("scaledobject.keda.sh/worker").unwrap()["writer"], "kubectl-client-side-apply", "{trace}");
    assert_eq!(created("horizontalpodautoscaler.autoscaling/keda-hpa-worker").unwrap()["writer"], "keda-operator");
    let managers = coord(&c, &[&["fields", "scaledobject/worker", "-o", "json"][..], &ns[..]].concat()).ok().json();
    let entries: Vec<(String, String)> = managers["objects"][0]["managers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["manager"].as_str().unwrap().into(), m["subresource"].as_str().unwrap().into()))
        .collect();
    for want in [("keda-operator", ""), ("keda-operator", "status"), ("kubectl-client-side-apply", "")] {
        assert!(entries.contains(&(want.0.into(), want.1.into())), "{want:?} not among {entries:?}");
    }
    // And an autoscaler wrote the Deployment's replicas through the scale subresource. Which one
    // is a race the test does not control: KEDA itself raises an idle target to minReplicaCount,
    // and the HPA it made (in kube-controller-manager) does the same; whichever writes last owns it.
    let worker = coord(&c, &[&["fields", "deploy/worker", "-o", "json"][..], &ns[..]].concat()).ok().json();
    let replicas = worker["objects"][0]["fields"].as_array().unwrap().iter().find(|f| f["path"] == ".spec.replicas");
    let replicas = replicas.unwrap_or_else(|| panic!("{worker}"));
    let owner = &replicas["owners"][0];
    assert!(["kube-controller-manager", "keda-operator"].contains(&owner["manager"].as_str().unwrap()), "{replicas}");
    assert_eq!(owner["subresource"], "scale", "{replicas}");
}

fn api_service_available(c: &Cluster) -> String {
    c.kubectl(&[
        "get",
        "apiservice",
        "v1beta1.metrics.k8s.io",
        "-o",
        r#"jsonpath={.status.conditions[?(@.type=="Available")].status}"#,
    ])
    .stdout
}

/// Stops metrics-server (by its pid) and returns how to start it again as it was.
fn stop_metrics_server(c: &Cluster) -> Vec<String> {
    let pidfile = c.dir.join("pids/metrics-server.pid");
    let pid = std::fs::read_to_string(&pidfile).unwrap().trim().to_string();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let argv: Vec<String> =
        cmdline.split(|&b| b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into()).collect();
    Command::new("kill").arg(&pid).status().unwrap();
    argv
}

// The server outlives the test on purpose: down.sh stops it by its pid, so it is never waited on here.
#[allow(clippy::zombie_processes)]
fn start_metrics_server(c: &Cluster, argv: &[String]) {
    let log = std::fs::File::create(c.dir.join("logs/metrics-server.log")).unwrap();
    let child = Command::new("setsid")
        .args(argv)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    // down.sh stops it by this pid.
    std::fs::write(c.dir.join("pids/metrics-server.pid"), child.id().to_string()).unwrap();
    wait_for("APIService v1beta1.metrics.k8s.io Available again", 120, || api_service_available(c) == "True");
}

#[test]
fn an_unavailable_api_service_is_named_skipped_and_can_be_accepted() {
    let (c, _turn) = turn();
    assert_eq!(api_service_available(&c), "True");
    let argv = stop_metrics_server(&c);
    wait_for("APIService v1beta1.metrics.k8s.io unavailable", 90, || api_service_available(&c) == "False");

    // Every command still answers, with one warning line naming the API.
    let named = |run: &Run| {
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}: {}", run.describe, run.stderr);
        assert!(lines[0].starts_with("warning: ") && lines[0].contains("metrics.k8s.io/v1beta1"), "{}", run.stderr);
    };
    for args in [
        &["check", "-A"][..],
        &["owners", "--all", "-A"],
        &["owners", "rollout/storefront", "-n", "coord-operators"],
        &["trace", "rollout/storefront", "-n", "coord-operators"],
        &["fields", "rollout/storefront", "-n", "coord-operators"],
    ] {
        named(&coord(&c, args).ok());
    }
    coord(&c, &["leases", "-A"]).ok();
    coord(&c, &["overlaps", "-A"]).ok();

    // check says what it skipped, in every output, and the run is not clean.
    let report = coord(&c, &["check", "-A", "-o", "json"]).ok().json();
    common::schema::conforms(&report);
    assert_eq!(report["complete"], false);
    assert_eq!(report["skipped"][0]["resource"], "metrics.k8s.io/v1beta1", "{}", report["skipped"]);
    let junit = coord(&c, &["check", "-A", "-o", "junit"]).ok().stdout;
    assert!(junit.contains("<testcase name=\"metrics.k8s.io/v1beta1\" classname=\"coord.coverage\">"), "{junit}");
    coord(&c, &["check", "-A", "--exit-code"]).code(4);
    // Accepted as known to be down, it passes the gate.
    let accept = write(
        "accept-metrics.yaml",
        "unreadable:\n- group: metrics.k8s.io\n  reason: metrics-server is down on this cluster\n",
    );
    let gate = coord(&c, &["check", "-A", "--exit-code", "--ignore-file", accept.to_str().unwrap()]).code(0);
    assert!(gate.stderr.is_empty(), "{}", gate.stderr);
    assert!(gate.stdout.contains("accepted as unreadable: metrics.k8s.io/v1beta1"), "{}", gate.stdout);
    let accepted = coord(&c, &["check", "-A", "-o", "json", "--ignore-file", accept.to_str().unwrap()]).ok().json();
    assert_eq!((&accepted["complete"], accepted["skipped"].as_array().unwrap().len()), (&Value::Bool(true), 0));
    assert_eq!(accepted["accepted"][0]["why"], "metrics-server is down on this cluster");

    // A command whose own target is in that API fails in one line.
    let target = coord(&c, &["owners", "nodes.metrics.k8s.io/kwok-node-0"]).code(1);
    target.one_line_error("metrics.k8s.io/v1beta1 is unavailable");
    coord(&c, &["fields", "podmetrics/x", "-n", "kube-system"]).code(1).one_line_error("metrics.k8s.io/v1beta1");

    start_metrics_server(&c, &argv);
    let back = coord(&c, &["check", "-A", "--exit-code"]).ok();
    assert!(back.stderr.is_empty(), "{}", back.stderr);
}

#[test]
fn a_crd_whose_conversion_webhook_is_down_is_skipped_and_the_rest_analysed() {
    let (c, _turn) = turn();
    // Two served versions, stored as v1, converted by a webhook nothing listens for: every
    // list of v2 (the preferred version) answers 500 after the API server's own retries.
    c.apply(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.convert.coord.test}
spec:
  group: convert.coord.test
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v2, served: true, storage: false, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  conversion:
    strategy: Webhook
    webhook: {conversionReviewVersions: [v1], clientConfig: {url: "https://127.0.0.1:1/convert"}}
"#,
    );
    wait_for("the CRD established", 60, || {
        c.kubectl(&[
            "get",
            "crd",
            "widgets.convert.coord.test",
            "-o",
            r#"jsonpath={.status.conditions[?(@.type=="Established")].status}"#,
        ])
        .stdout
            == "True"
    });
    c.apply("apiVersion: convert.coord.test/v1\nkind: Widget\nmetadata: {name: w1, namespace: coord-operators}\n");

    let run = coord(&c, &["check", "-A", "-o", "json"]).ok();
    let report = run.json();
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0]["resource"], "widgets.convert.coord.test");
    assert!(skipped[0]["reason"].as_str().unwrap().contains("conversion webhook"), "{}", skipped[0]);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(lines.len() == 1 && lines[0].contains("widgets.convert.coord.test"), "{}", run.stderr);
    // The rest was read and analysed.
    let owners = report["mechanisms"].as_array().unwrap().iter().find(|m| m["name"] == "owners").unwrap();
    assert!(owners["checked"]["Rollout"].as_u64() >= Some(1), "{owners}");
    assert!(report["findings"].as_array().unwrap().is_empty(), "{}", report["findings"]);
    coord(&c, &["check", "-A", "--exit-code"]).code(4);
    let accept = write(
        "accept-widgets.yaml",
        "unreadable:\n- group: convert.coord.test\n  resource: widgets\n  reason: its converter is being replaced\n",
    );
    coord(&c, &["check", "-A", "--exit-code", "--ignore-file", accept.to_str().unwrap()]).code(0);

    c.kubectl(&["delete", "crd", "widgets.convert.coord.test", "--wait=true"]).ok();
}

#[test]
fn a_fight_over_replicas_a_team_accepted_is_silenced_by_annotation_or_ignore_file() {
    let (c, _turn) = turn();
    // A true finding on real operators: a GitOps tool applies spec.replicas server-side while
    // KEDA's HPA writes it through the scale subresource.
    let ns = "coord-accepted";
    c.namespace(ns);
    let apply = |manifest: &str| {
        let path = write("batch.yaml", manifest);
        c.kubectl(&["apply", "--server-side", "--field-manager=argocd", "-f", path.to_str().unwrap()]).ok();
    };
    apply(
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: batch, namespace: coord-accepted, labels: {app.kubernetes.io/managed-by: argocd}}
spec:
  replicas: 1
  selector: {matchLabels: {app: batch}}
  template:
    metadata: {labels: {app: batch}}
    spec:
      containers: [{name: batch, image: registry.k8s.io/pause:3.10}]
"#,
    );
    c.apply(
        r#"apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: batch, namespace: coord-accepted}
spec:
  scaleTargetRef: {name: batch}
  minReplicaCount: 2
  maxReplicaCount: 4
  triggers:
  - type: cron
    metadata: {timezone: Etc/UTC, start: "0 8 * * *", end: "0 18 * * *", desiredReplicas: "3"}
"#,
    );
    wait_for("the HPA to take spec.replicas", 120, || {
        c.kubectl(&["-n", ns, "get", "deploy/batch", "-o", "jsonpath={.spec.replicas}"]).stdout == "2"
    });

    let found = coord(&c, &["check", "-n", ns, "--exit-code"]).code(3);
    // Grouped for people: the object, then its finding with severity and code.
    let lines: Vec<&str> = found.stdout.lines().collect();
    let at = lines.iter().position(|l| *l == "  deployment.apps/batch").unwrap_or_else(|| panic!("{}", found.stdout));
    let row = lines[at + 1];
    assert!(row.starts_with("    warning  CO404") && row.contains(".spec.replicas"), "{}", found.stdout);

    // An ignore file: by code and namespace glob, by label selector; each with its reason.
    for (name, rule) in [
        (
            "by-code",
            "- codes: [CO404]\n  namespaces: [coord-acc*]\n  reason: KEDA owns replicas; Argo CD ignores the field\n",
        ),
        (
            "by-selector",
            "- selector: app.kubernetes.io/managed-by=argocd\n  mechanisms: [fields]\n  reason: KEDA owns replicas\n",
        ),
    ] {
        let file = write(&format!("{name}.yaml"), &format!("ignore:\n{rule}"));
        let file = file.to_str().unwrap();
        let quiet = coord(&c, &["check", "-n", ns, "--exit-code", "--ignore-file", file]).code(0);
        assert!(quiet.stdout.contains("0 findings at or above warning, 1 silenced"), "{name}: {}", quiet.stdout);
        let listed = coord(&c, &["check", "-n", ns, "--ignore-file", file, "--show-silenced"]).ok().stdout;
        assert!(
            listed.contains("CO404 coord-accepted deployment.apps/batch") && listed.contains("KEDA owns replicas"),
            "{listed}"
        );
        let report = coord(&c, &["check", "-n", ns, "-o", "json", "--ignore-file", file]).ok().json();
        common::schema::conforms(&report);
        assert_eq!(report["findings"].as_array().unwrap().len(), 0);
        assert_eq!(report["silenced"][0]["code"], "CO404");
        assert_eq!(report["silenced"][0]["by"], "ignore-file rule 1");
        let junit = coord(&c, &["check", "-n", ns, "-o", "junit", "--ignore-file", file]).ok().stdout;
        assert!(
            junit.contains("<testsuite name=\"silenced\" tests=\"1\"") && junit.contains("failures=\"0\""),
            "{junit}"
        );
    }
    // A rule for another code silences nothing.
    let other = write("other.yaml", "ignore:\n- codes: [CO301]\n  reason: not this one\n");
    coord(&c, &["check", "-n", ns, "--exit-code", "--ignore-file", other.to_str().unwrap()]).code(3);
    // A file that names an unknown code is bad input, in one line.
    let bad = write("bad.yaml", "ignore:\n- codes: [CO999]\n  reason: typo\n");
    coord(&c, &["check", "-n", ns, "--ignore-file", bad.to_str().unwrap()]).code(2).one_line_error("CO999");

    // The annotation on the object, set by the team (the plugin never writes).
    c.kubectl(&[
        "-n",
        ns,
        "annotate",
        "deploy/batch",
        "kubectl-coord/ignore=CO404",
        "kubectl-coord/ignore-reason=accepted in review: KEDA owns replicas",
    ])
    .ok();
    let quiet = coord(&c, &["check", "-n", ns, "--exit-code", "-o", "json"]).code(0).json();
    assert_eq!(quiet["silenced"][0]["by"], "annotation");
    assert_eq!(quiet["silenced"][0]["why"], "accepted in review: KEDA owns replicas");

    c.kubectl(&["delete", "namespace", ns, "--wait=true", "--timeout=120s"]).ok();
}
