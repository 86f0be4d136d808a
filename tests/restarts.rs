//! Watches across restarts of the real kube-apiserver: once plainly, once with etcd
//! compacted while it was down (the watches' resourceVersions are then too old and must be
//! listed again). Writers keep changing a Lease, a label and a Deployment's spec
//! throughout (each write a change), each by a field manager named for it; the writer's own log of the writes
//! the server accepted is the oracle: each appears exactly once in each watch's output.
//!
//! It stops the API server, so tests/run.sh runs it alone (`--ignored`) against the second
//! control plane, after every other test there has ended.

mod common;

use std::fs::File;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Cluster, cluster2};
use serde_json::Value;

fn watch(c: &Cluster, out: &std::path::Path, args: &[&str]) -> Child {
    let err = out.with_extension("err");
    Command::new(env!("CARGO_BIN_EXE_kubectl-coord"))
        .args(args)
        .env("KUBECONFIG", c.kubeconfig("viewer"))
        .env("NO_COLOR", "1")
        .stdout(Stdio::from(File::create(out).unwrap()))
        .stderr(Stdio::from(File::create(err).unwrap()))
        .spawn()
        .expect("the plugin starts")
}

fn restart(c: &Cluster, down_secs: u32, compact: bool) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cluster/restart-apiserver.sh");
    let mut cmd = Command::new("bash");
    cmd.arg(script).arg(&c.dir).arg(down_secs.to_string());
    if compact {
        cmd.arg("--compact");
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "restart failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// Writes by manager writer-N, every 2.5 s, until told to stop: the numbers the server took.
fn writer(c: Cluster, ns: String, stop: Arc<AtomicBool>, accepted: Arc<Mutex<Vec<u32>>>) {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let manager = format!("writer-{n}");
        let lease = format!(r#"{{"spec":{{"holderIdentity":"{manager}"}}}}"#);
        // Always a change (a write that changes nothing is no event): minReadySeconds is n.
        let spec = format!(r#"{{"spec":{{"minReadySeconds":{n}}}}}"#);
        // One write per kind; a number counts only when the server took all three.
        let ok = [
            vec!["patch", "lease", "lock", "--type", "merge", "-p", &lease],
            vec!["label", "configmap", "settings", "--overwrite", &format!("k=v{n}")],
            vec!["patch", "deployment", "web", "--type", "merge", "-p", &spec],
        ]
        .iter()
        .map(|args| {
            let mut full = args.clone();
            full.extend(["-n", &ns, "--request-timeout", "2s", "--field-manager", &manager]);
            c.kubectl(&full).code == 0
        })
        .filter(|ok| !ok)
        .count()
            == 0;
        if ok {
            accepted.lock().unwrap().push(n);
        }
        std::thread::sleep(Duration::from_millis(2500));
    }
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[test]
#[ignore = "stops the API server: tests/run.sh runs it on its own, after the other tests"]
fn watches_resume_after_an_api_server_restart_and_an_etcd_compaction() {
    let c = cluster2();
    let ns = c.fresh_namespace("coord-restart");
    c.apply(&format!(
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {{name: lock, namespace: {ns}}}\n\
         spec: {{holderIdentity: writer-0, leaseDurationSeconds: 60}}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings, namespace: {ns}, labels: {{k: v0}}}}\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: {ns}}}\n\
         spec:\n  replicas: 1\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n\
         \x20   spec: {{containers: [{{name: c, image: example.com/web:1}}]}}\n"
    ));
    let dir = tempdir(&c, &ns);
    let (leases_out, fields_out, trace_out) = (dir.join("leases.out"), dir.join("fields.out"), dir.join("trace.out"));
    let until = "100s";
    let mut watches = vec![
        watch(&c, &leases_out, &["leases", "--watch", "-n", &ns, "-o", "json", "--watch-timeout", until]),
        watch(
            &c,
            &fields_out,
            &["fields", "cm/settings", "-n", &ns, "--watch", "-o", "json", "--watch-timeout", until],
        ),
        watch(
            &c,
            &trace_out,
            &["trace", "deploy/web", "-n", &ns, "--watch", "-o", "json", "--settle", "300s", "--watch-timeout", until],
        ),
    ];
    std::thread::sleep(Duration::from_secs(6));

    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(Mutex::new(Vec::new()));
    let writing = {
        let (c, ns, stop, accepted) = (Cluster { dir: c.dir.clone() }, ns.clone(), stop.clone(), accepted.clone());
        std::thread::spawn(move || writer(c, ns, stop, accepted))
    };
    std::thread::sleep(Duration::from_secs(8));
    restart(&c, 12, false);
    std::thread::sleep(Duration::from_secs(10));
    restart(&c, 12, true);
    std::thread::sleep(Duration::from_secs(10));
    stop.store(true, Ordering::Relaxed);
    writing.join().unwrap();
    for w in &mut watches {
        let status = w.wait().unwrap();
        assert!(status.success(), "a watch ended with {status}");
    }
    let accepted = accepted.lock().unwrap().clone();
    assert!(accepted.len() >= 8, "the writer should have got through most of the time: {accepted:?}");

    for out in [&leases_out, &fields_out, &trace_out] {
        let stderr = std::fs::read_to_string(out.with_extension("err")).unwrap();
        let said = |words: &str| stderr.lines().filter(|l| l.contains(words)).count();
        assert_eq!(said("lost the API server at https://127.0.0.1:"), 2, "{}: {stderr}", out.display());
        assert_eq!(said("is back after"), 2, "{}: {stderr}", out.display());
        assert_eq!(stderr.lines().count(), 4, "nothing else on stderr: {stderr}");
    }
    let leases_err = std::fs::read_to_string(leases_out.with_extension("err")).unwrap();
    assert!(
        leases_err.lines().last().unwrap().contains("listed again (the watch's resourceVersion had expired)"),
        "after the compaction the watch lists again: {leases_err}"
    );

    // Exactly once, per write the server took, in each watch; nothing seen twice.
    let count = |values: Vec<String>| move |n: u32| values.iter().filter(|v| **v == format!("writer-{n}")).count();
    let leases = count(
        lines(&leases_out)
            .iter()
            .filter(|l| l["event"] == "leader-changed")
            .map(|l| l["to"].as_str().unwrap_or_default().to_string())
            .collect(),
    );
    let fields = count(
        lines(&fields_out)
            .iter()
            .filter(|l| l["path"] == ".metadata.labels.k")
            .flat_map(|l| l["to"].as_array().cloned().unwrap_or_default())
            .map(|m| m.as_str().unwrap_or_default().to_string())
            .collect(),
    );
    let trace = count(
        lines(&trace_out)
            .iter()
            .filter(|r| {
                r["object"] == "deployment.apps/web" && r["what"].as_str().is_some_and(|w| w.starts_with("spec"))
            })
            .map(|r| r["who"].as_str().unwrap_or_default().to_string())
            .collect(),
    );
    let last = *accepted.last().unwrap();
    for n in 1..=last {
        let want = usize::from(accepted.contains(&n));
        for (name, seen) in [("leases", leases(n)), ("fields", fields(n)), ("trace", trace(n))] {
            assert!(
                seen == want || (want == 0 && seen <= 1),
                "{name} --watch saw writer-{n} {seen} times (the server took it: {})\n{}",
                want == 1,
                std::fs::read_to_string(match name {
                    "leases" => &leases_out,
                    "fields" => &fields_out,
                    _ => &trace_out,
                })
                .unwrap()
            );
        }
    }
}

fn tempdir(c: &Cluster, ns: &str) -> std::path::PathBuf {
    let dir = c.dir.join("restarts").join(ns);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
