//! `history`, `check --audit-log` and `trace --audit-log` on the logs the real API servers of
//! the suite write, at each level: cluster 1 logs Metadata, cluster 2 RequestResponse for the
//! objects controllers share (`up.sh --audit-policy detailed`), cluster 3 the same without
//! managedFields (`detailed-no-fields`). The histories are real: two controller managers
//! racing (one with leader election off), a client-go election whose leader is killed, KEDA
//! against a server-side applier, two API servers on one etcd. Expected figures come from jq
//! over the same logs, not from the code under test.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Cluster, Run, cluster, cluster2, cluster3, wait_for};
use serde_json::Value;

/// `kubectl coord ARGS` (history needs no cluster: no kubeconfig at all).
fn coord(args: &[&str]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
    cmd.args(args).env_remove("KUBECONFIG").env("HOME", std::env::temp_dir().join("coord-no-home"));
    Run::of(cmd)
}

fn log(c: &Cluster) -> String {
    c.dir.join("audit.log").to_str().unwrap().to_string()
}

/// jq over files: its output lines.
fn jq(filter: &str, files: &[&str]) -> Vec<String> {
    let out = Command::new("jq").args(["-c", filter]).args(files).output().expect("jq (from Debian)");
    assert!(out.status.success(), "jq {filter}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

/// The jq condition for what history counts as a write: a last stage, a writing verb, no dry run.
const WRITE: &str = r#".stage == "ResponseComplete" and (.verb | IN("create","update","patch","delete","deletecollection")) and ((.requestURI | test("dryRun=")) | not)"#;

/// A second instance of a component (tests/cluster/another.sh), stopped when dropped.
struct Another {
    pid_file: PathBuf,
    env: Vec<(String, String)>,
}

impl Another {
    fn start(c: &Cluster, component: &str) -> Another {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cluster/another.sh");
        let out = Command::new("bash").arg(script).arg(&c.dir).arg(component).output().unwrap();
        assert!(out.status.success(), "another.sh {component}: {}", String::from_utf8_lossy(&out.stderr));
        let env = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
            .collect();
        Another { pid_file: c.dir.join(format!("pids/{component}-2.pid")), env }
    }

    fn get(&self, key: &str) -> &str {
        &self.env.iter().find(|(k, _)| k == key).unwrap().1
    }
}

impl Drop for Another {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.pid_file) {
            let _ = Command::new("kill").arg(pid.trim()).status();
            std::thread::sleep(Duration::from_millis(500));
            let _ = Command::new("kill").args(["-9", pid.trim()]).status();
            let _ = std::fs::remove_file(&self.pid_file);
        }
    }
}

/// Two controller managers, one elected and one with leader election off: two of every
/// controller, racing on the same objects. The log (Metadata level) shows their 409s, each
/// instance with its own service-account token (credential id), and history counts exactly
/// the 409s jq counts, per user and object.
#[test]
fn two_controller_managers_race_and_their_conflicts_are_counted_as_jq_counts_them() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-history-race");
    {
        let _second = Another::start(&c, "kube-controller-manager");
        c.kubectl(&["-n", &ns, "create", "deployment", "web", "--image=registry.k8s.io/pause:3.10"]).ok();
        for replicas in [3, 1, 4, 2, 5, 1] {
            c.kubectl(&["-n", &ns, "scale", "deployment/web", &format!("--replicas={replicas}")]).ok();
            std::thread::sleep(Duration::from_secs(2));
        }
        std::thread::sleep(Duration::from_secs(3));
    }
    // The log is written in batches of up to a second.
    std::thread::sleep(Duration::from_secs(2));
    let log = log(&c);
    let filter = format!(
        r#"select({WRITE} and .objectRef.namespace == "{ns}" and .responseStatus.code == 409 and ((.objectRef.resource | IN("events")) | not)) | [.user.username, .objectRef.resource, .objectRef.name] | join(" ")"#
    );
    let mut expected: std::collections::BTreeMap<String, u64> = Default::default();
    for line in jq(&filter, &[&log]) {
        *expected.entry(line.trim_matches('"').to_string()).or_default() += 1;
    }
    assert!(!expected.is_empty(), "two controller managers made no 409 in {ns}");
    let report = coord(&["history", "--findings", "--audit-log", &log, "-n", &ns, "--conflict-min", "1", "-o", "json"])
        .ok()
        .json();
    let mut counted: std::collections::BTreeMap<String, u64> = Default::default();
    for c in report["conflicts"].as_array().unwrap() {
        let key = format!(
            "{} {} {}",
            c["user"].as_str().unwrap(),
            c["object"]["resource"].as_str().unwrap(),
            c["object"]["name"].as_str().unwrap()
        );
        *counted.entry(key).or_default() += c["refused"].as_u64().unwrap();
    }
    assert_eq!(counted, expected, "409s per user and object: history against jq");
    // The two instances are told apart by their tokens: another instance wrote in between.
    let two =
        report["conflicts"].as_array().unwrap().iter().any(|c| !c["otherInstances"].as_array().unwrap().is_empty());
    assert!(two, "{report:#}");
    let finding =
        report["findings"].as_array().unwrap().iter().find(|f| f["code"] == "CO602" && f["severity"] == "error");
    assert!(finding.is_some_and(|f| f["message"].as_str().unwrap().contains("two are running")), "{report:#}");

    // One object's history: every write jq finds, in time order, each 409 explained.
    let history = coord(&["history", "deploy/web", "-n", &ns, "--audit-log", &log, "-o", "json"]).ok().json();
    let writes = history["writes"].as_array().unwrap();
    let want = jq(
        &format!(
            r#"select({WRITE} and .objectRef.namespace == "{ns}" and .objectRef.resource == "deployments" and .objectRef.name == "web") | .auditID"#
        ),
        &[&log],
    );
    assert_eq!(writes.len(), want.len());
    let times: Vec<&str> = writes.iter().map(|w| w["time"].as_str().unwrap()).collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted, "in time order");
    for w in writes.iter().filter(|w| w["code"] == 409) {
        assert!(w["conflict"]["heldResourceVersion"].is_string(), "an update's 409 says the version it held: {w:#}");
    }
    // check --audit-log reports the same race among every other analysis.
    let check = c.coord("viewer", &["check", "-n", &ns, "--audit-log", &log, "-o", "json"]).code(0).json();
    let history_findings: Vec<&Value> =
        check["findings"].as_array().unwrap().iter().filter(|f| f["mechanism"] == "history").collect();
    assert!(history_findings.iter().any(|f| f["code"] == "CO602"), "{check:#}");
    assert!(check["mechanisms"].as_array().unwrap().iter().any(|m| m["name"] == "history"));
}

/// Two API servers on one etcd write two logs; read together they are one history, merged
/// by time, each request once (and once however many times a log is given).
#[test]
fn two_api_servers_logs_merge_into_one_history() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-history-two");
    let second = Another::start(&c, "kube-apiserver");
    let port = second.get("API_PORT_2").to_string();
    let log2 = second.get("AUDIT_LOG_2").to_string();
    let via_second = c.dir.join(format!("admin-{port}.kubeconfig"));
    let admin = std::fs::read_to_string(c.kubeconfig("admin")).unwrap();
    std::fs::write(&via_second, admin.replace(&c.env("SERVER"), &format!("https://127.0.0.1:{port}"))).unwrap();
    c.kubectl(&["-n", &ns, "create", "configmap", "shared", "--from-literal=n=0"]).ok();
    for i in 1..=10 {
        let mut cmd = Command::new(c.bin().join("kubectl"));
        cmd.args([
            "-n",
            &ns,
            "patch",
            "configmap",
            "shared",
            "--type=merge",
            "-p",
            &format!(r#"{{"data":{{"n":"{i}"}}}}"#),
        ]);
        if i % 2 == 0 {
            cmd.env("KUBECONFIG", &via_second);
        } else {
            cmd.env("KUBECONFIG", c.kubeconfig("admin"));
        }
        Run::of(cmd).ok();
    }
    std::thread::sleep(Duration::from_secs(2));
    drop(second);
    let log1 = log(&c);
    let filter =
        format!(r#"select({WRITE} and .objectRef.namespace == "{ns}" and .objectRef.name == "shared") | .auditID"#);
    let (in_one, in_two) = (jq(&filter, &[&log1]), jq(&filter, &[&log2]));
    assert_eq!(
        (in_one.len(), in_two.len()),
        (6, 5),
        "the create and 5 patches through the first, 5 through the second"
    );
    let read = |logs: &[&str]| {
        let mut args = vec!["history", "cm/shared", "-n", &ns, "-o", "json"];
        for l in logs {
            args.extend(["--audit-log", l]);
        }
        coord(&args).ok().json()
    };
    let both = read(&[&log1, &log2]);
    let writes = both["writes"].as_array().unwrap();
    assert_eq!(writes.len(), 11);
    let ids: Vec<String> = writes.iter().map(|w| w["auditId"].to_string()).collect();
    let mut all: Vec<String> = in_one.iter().chain(&in_two).cloned().collect();
    all.sort();
    let mut got = ids.clone();
    got.sort();
    assert_eq!(got, all);
    let times: Vec<&str> = writes.iter().map(|w| w["time"].as_str().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "merged by time: {times:?}");
    // The same log twice, or a directory holding it and a gzip copy: each request once.
    let twice = read(&[&log1, &log2, &log1]);
    assert_eq!(twice["writes"].as_array().unwrap().len(), 11);
    assert!(twice["log"]["duplicates"].as_u64().unwrap() >= 6);
    let dir = c.dir.join(format!("{ns}-logs"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&log1, dir.join("audit.log")).unwrap();
    let gz = Command::new("sh")
        .arg("-c")
        .arg(format!("gzip -c '{log2}' > '{}'", dir.join("audit-2.log.gz").display()))
        .status()
        .unwrap();
    assert!(gz.success());
    let from_dir = read(&[dir.to_str().unwrap()]);
    assert_eq!(from_dir["writes"].as_array().unwrap().len(), 11);
    assert_eq!(from_dir["log"]["inputs"].as_array().unwrap().len(), 2);
}

fn elector(c: &Cluster, ns: &str, identity: &str) -> common::elector::Elector {
    common::elector::elector(c, ns, identity, ["4s", "3s", "1s"])
}

fn holder(c: &Cluster, ns: &str) -> String {
    c.kubectl(&["-n", ns, "get", "lease", "elect", "-o", "jsonpath={.spec.holderIdentity}"]).stdout
}

/// A real client-go election (RequestResponse for Leases on this cluster): a leads, is killed
/// without releasing, b takes over once a's lease has expired. history names the holders in
/// order, as the request bodies in the log do (jq), the takeover, and the gap past the duration.
#[test]
fn a_leader_killed_and_the_takeover_as_the_log_tells_it() {
    let c = cluster2();
    let ns = c.fresh_namespace("coord-history-elect");
    let a = elector(&c, &ns, "history-a");
    wait_for("a to lead", 30, || holder(&c, &ns) == "history-a");
    std::thread::sleep(Duration::from_secs(4));
    let b = elector(&c, &ns, "history-b");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(holder(&c, &ns), "history-a");
    let mut a = a;
    a.child.kill().unwrap();
    let _ = a.child.wait();
    wait_for("b to take over", 30, || holder(&c, &ns) == "history-b");
    std::thread::sleep(Duration::from_secs(5));
    drop(b);
    std::thread::sleep(Duration::from_secs(2));
    let log = log(&c);
    let holders: Vec<String> = jq(
        &format!(
            r#"select({WRITE} and .objectRef.namespace == "{ns}" and .objectRef.resource == "leases" and .responseStatus.code < 300) | .requestObject.spec.holderIdentity"#
        ),
        &[&log],
    );
    let mut order: Vec<String> = Vec::new();
    for h in holders.iter().map(|h| h.trim_matches('"').to_string()).filter(|h| !h.is_empty() && h != "null") {
        if order.last() != Some(&h) {
            order.push(h);
        }
    }
    assert_eq!(order, ["history-a", "history-b"], "the log's own bodies");
    let report =
        coord(&["history", "--findings", "--audit-log", &log, "-n", &ns, "--churn-min", "1", "-o", "json"]).ok().json();
    let lease = &report["leadership"][0];
    assert_eq!(lease["object"]["name"], "elect", "{report:#}");
    assert_eq!(lease["holders"], serde_json::json!(["history-a", "history-b"]));
    assert_eq!(lease["takeovers"].as_array().unwrap().len(), 1, "{lease:#}");
    assert_eq!(lease["takeovers"][0]["from"], "history-a");
    assert_eq!(lease["durationSeconds"], 4);
    let gaps = lease["gaps"].as_array().unwrap();
    assert!(gaps.iter().any(|g| g["seconds"].as_f64().unwrap() > 4.0 && g["sameHolder"] == false), "{lease:#}");
    let codes: Vec<&str> = report["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"CO604"), "{codes:?}");
    // The lease's own history shows each renewal with the holder's managedFields entry.
    let history = coord(&["history", "lease/elect", "-n", &ns, "--audit-log", &log, "-o", "json"]).ok().json();
    let renewal =
        history["writes"].as_array().unwrap().iter().find(|w| w["code"] == 200 && w["verb"] == "update").unwrap();
    assert_eq!(renewal["level"], "RequestResponse");
    assert!(renewal["resourceVersion"].is_string(), "the stored version: {renewal:#}");
    assert!(
        renewal["managedFields"].as_array().is_some_and(|m| m.iter().any(|p| p == ".spec.holderIdentity")),
        "{renewal:#}"
    );
}

/// KEDA (its HPA, in the controller manager, or keda-operator itself, through the scale
/// subresource) against a GitOps tool applying spec.replicas server-side: a real fight over
/// one field, on a cluster that logs bodies without managedFields.
#[test]
fn keda_and_a_server_side_applier_fight_over_replicas() {
    let c = cluster3();
    let ns = c.fresh_namespace("coord-history-fight");
    let manifest = c.dir.join(format!("{ns}-deploy.yaml"));
    std::fs::write(
        &manifest,
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: batch, namespace: {ns}}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: batch}}}}\n  template:\n    metadata: {{labels: {{app: batch}}}}\n    spec:\n      containers: [{{name: batch, image: registry.k8s.io/pause:3.10}}]\n"
        ),
    )
    .unwrap();
    let apply = || {
        c.kubectl(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=argocd",
            "-f",
            manifest.to_str().unwrap(),
        ])
        .ok();
    };
    apply();
    c.apply(&format!(
        "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {{name: batch, namespace: {ns}}}\nspec:\n  scaleTargetRef: {{name: batch}}\n  pollingInterval: 2\n  minReplicaCount: 2\n  maxReplicaCount: 4\n  triggers:\n  - type: cron\n    metadata: {{timezone: Etc/UTC, start: \"0 8 * * *\", end: \"0 18 * * *\", desiredReplicas: \"3\"}}\n"
    ));
    let replicas = || c.kubectl(&["-n", &ns, "get", "deploy", "batch", "-o", "jsonpath={.spec.replicas}"]).stdout;
    wait_for("KEDA to raise batch to 2", 120, || replicas() == "2");
    // The applier puts 1 back whenever the scaler has put 2, for a minute and a half.
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while std::time::Instant::now() < deadline {
        if replicas() != "1" {
            apply();
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    c.kubectl(&["-n", &ns, "delete", "scaledobject", "batch"]).ok();
    std::thread::sleep(Duration::from_secs(2));
    let log = log(&c);
    // jq: the writes of spec.replicas, as the bodies say, and by whom.
    let sets = jq(
        &format!(
            r#"select({WRITE} and .objectRef.namespace == "{ns}" and .objectRef.resource == "deployments" and .objectRef.name == "batch" and (.objectRef.subresource // "") != "status" and .responseStatus.code < 300 and .requestObject.spec.replicas != null) | [.user.username, (.requestURI | capture("fieldManager=(?<m>[^&]*)").m // ""), .requestObject.spec.replicas] | @tsv"#
        ),
        &[&log],
    );
    let by_argocd = sets.iter().filter(|l| l.contains("argocd")).count();
    let by_scaler = sets.len() - by_argocd;
    assert!(by_argocd >= 4 && by_scaler >= 4, "{sets:#?}");
    let report = coord(&["history", "--findings", "--audit-log", &log, "-n", &ns, "-o", "json"]).ok().json();
    let fight = report["fights"].as_array().unwrap().iter().find(|f| f["object"]["name"] == "batch");
    let fight = fight.unwrap_or_else(|| panic!("no fight found: {report:#}"));
    assert_eq!(fight["fields"], serde_json::json!([".spec.replicas"]), "{fight:#}");
    assert_eq!(fight["evidence"], "field");
    let writers = fight["writers"].to_string();
    assert!(writers.contains("argocd"), "{writers}");
    let alternations = fight["alternations"].as_u64().unwrap();
    // Each alternation is a change of hands: at most every write of the field, at least one
    // hand-over per write by the side that wrote less.
    assert!(
        alternations as usize >= by_argocd.min(by_scaler) && alternations as usize <= sets.len(),
        "{alternations} for {sets:#?}"
    );
    let check = c
        .coord("viewer", &["check", "-n", &ns, "--only", "history,fields", "--audit-log", &log, "-o", "json"])
        .ok()
        .json();
    assert!(check["findings"].as_array().unwrap().iter().any(|f| f["code"] == "CO601"), "{check:#}");
    let table = coord(&["history", "deploy/batch", "-n", &ns, "--audit-log", &log]).ok().stdout;
    assert!(table.lines().filter(|l| l.contains(".spec.replicas")).count() >= 8, "{table}");
    // trace --audit-log: every write with its microsecond time, where managedFields keep each
    // manager's last in whole seconds; the ReplicaSet's creation a measured number of ms after
    // the Deployment's.
    let trace = c.coord("viewer", &["trace", "deploy/batch", "-n", &ns, "--audit-log", &log, "-o", "json"]).ok().json();
    let hops = trace["hops"].as_array().unwrap();
    let from_log: Vec<&Value> = hops.iter().filter(|h| h["source"] == "audit log").collect();
    assert!(
        from_log.iter().filter(|h| h["ref"] == "deployment.apps/batch" && h["kind"] == "spec").count()
            >= by_argocd.min(by_scaler),
        "{trace:#}"
    );
    let rs_created =
        from_log.iter().find(|h| h["kind"] == "created" && h["ref"].as_str().unwrap().starts_with("replicaset.apps/"));
    let rs_created = rs_created.unwrap_or_else(|| panic!("{trace:#}"));
    assert_eq!(rs_created["precision"], "microsecond");
    assert_eq!(rs_created["lag"]["plusMinusMillis"], 0, "{rs_created:#}");
    assert!(rs_created["lag"]["millis"].as_i64().unwrap() < 1000, "{rs_created:#}");
    // The fight's namespace goes, and is waited for: tests/operators.rs, which runs later on
    // this cluster, checks it -A as a healthy cluster, where keda-operator's and argocd's
    // managedFields on one replicas field would be a finding (CO404).
    c.kubectl(&["delete", "namespace", &ns, "--timeout=180s"]).ok();
}

/// At Request level the log holds Secrets' data: history prints field paths, never a value,
/// in every output format.
#[test]
fn no_secret_value_leaves_the_log() {
    let c = cluster2();
    let ns = c.fresh_namespace("coord-history-secret");
    let canary = "s3cr3t-canary-7f1e";
    c.kubectl(&["-n", &ns, "create", "secret", "generic", "db", &format!("--from-literal=password={canary}")]).ok();
    c.kubectl(&[
        "-n",
        &ns,
        "patch",
        "secret",
        "db",
        "--type=merge",
        "-p",
        &format!(r#"{{"stringData":{{"token":"{canary}-2"}}}}"#),
    ])
    .ok();
    std::thread::sleep(Duration::from_secs(2));
    let log = log(&c);
    let encoded = base64_of(canary);
    let raw = std::fs::read_to_string(&log).unwrap();
    assert!(
        raw.contains(&encoded) || raw.contains(canary),
        "the policy logs the Secret's data: the test needs it there"
    );
    for format in ["table", "wide", "json", "yaml"] {
        let out = coord(&["history", "secret/db", "-n", &ns, "--audit-log", &log, "-o", format]).ok();
        for text in [&out.stdout, &out.stderr] {
            assert!(
                !text.contains(canary) && !text.contains(&encoded) && !text.contains(&encoded[..12]),
                "{format}: {text}"
            );
        }
        assert!(
            out.stdout.contains("password") || format == "table" && out.stdout.contains(".data"),
            "{format}: {}",
            out.stdout
        );
        let all = coord(&["history", "--findings", "--audit-log", &log, "-o", format]).ok();
        assert!(!all.stdout.contains(canary) && !all.stdout.contains(&encoded), "{format}");
    }
}

fn base64_of(text: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(format!("printf %s '{text}' | base64")).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A real log, cut and spoiled as logs are: a line being written when read, a line of YAML
/// the API server wrote as it was, a line over 10 MB. Each is skipped and counted in one
/// stderr line naming where the first was; a file that is no audit log is an error, exit 2.
#[test]
fn bad_lines_are_counted_and_a_file_that_is_no_log_is_refused() {
    let c = cluster();
    let dir = c.dir.join("history-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let real = std::fs::read_to_string(log(&c)).unwrap();
    let lines: Vec<&str> = real.lines().take(200).collect();
    let mut spoiled = lines[..100].join("\n");
    spoiled.push_str("\napiVersion: apps/v1\nkind: Deployment\n");
    spoiled.push_str(&format!("{{\"kind\":\"Event\",\"x\":\"{}\"}}\n", "x".repeat(11 * 1024 * 1024)));
    spoiled.push_str(&lines[100..].join("\n"));
    let cut = &lines[199][..lines[199].len() / 2];
    spoiled.push('\n');
    spoiled.push_str(cut);
    let path = dir.join("audit.log");
    std::fs::write(&path, spoiled).unwrap();
    let out = coord(&["history", "--findings", "--audit-log", path.to_str().unwrap(), "-o", "json"]).ok();
    let warning: Vec<&str> = out.stderr.lines().filter(|l| l.contains("skipped")).collect();
    assert_eq!(warning.len(), 1, "{}", out.stderr);
    let w = warning[0];
    assert!(w.contains("skipped 4 lines"), "{w}");
    assert!(w.contains("2 not JSON (first at ") && w.contains("audit.log:101"), "{w}");
    assert!(w.contains("1 over 10 MB") && w.contains("audit.log:103"), "{w}");
    assert!(w.contains("1 cut short") && w.contains("audit.log:204"), "{w}");
    let json = out.json();
    assert_eq!(json["log"]["skippedLines"]["notJson"]["count"], 2);
    // Not an audit log at all: one line, exit 2.
    let manifest = dir.join("deploy.json");
    std::fs::write(&manifest, r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}"#).unwrap();
    let refused = coord(&["history", "--findings", "--audit-log", manifest.to_str().unwrap()]).code(2);
    refused.one_line_error("not an audit log");
    let missing = coord(&["history", "--findings", "--audit-log", dir.join("nope").to_str().unwrap()]).code(2);
    missing.one_line_error("no such file");
    // Standard input, as `kubectl logs` or a shipper hands it over.
    let mut stdin = Command::new(env!("CARGO_BIN_EXE_kubectl-coord"))
        .args(["history", "--findings", "--audit-log", "-", "-o", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    stdin.stdin.take().unwrap().write_all(lines.join("\n").as_bytes()).unwrap();
    let out = stdin.wait_with_output().unwrap();
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["log"]["events"].as_u64().unwrap(), 200);
}
