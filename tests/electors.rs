//! Leases held by third-party election clients, as users' controllers hold them: a
//! sigs.k8s.io/controller-runtime manager (Go, built by tests/cluster/build.sh) and
//! kube-lease-manager (Rust, from crates.io, run here as a child process of this test
//! binary). For each: the holder resolved (to its pod, or shown as a process outside the
//! cluster), its field manager shown by `fields lease/NAME`, a takeover after SIGKILL seen
//! by `leases --watch`, and a clean release recognised.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{Cluster, cluster, wait_for};
use serde_json::Value;

/// One election participant; killed when dropped.
struct Participant {
    child: Child,
}

impl Participant {
    fn signal(&self, sig: &str) {
        assert!(Command::new("kill").args([sig, &self.child.id().to_string()]).status().unwrap().success());
    }

    /// Waits for the process to end (after SIGTERM) and says whether it exited cleanly.
    fn wait(mut self) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.success();
            }
            assert!(std::time::Instant::now() < deadline, "the participant did not end after SIGTERM");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Participant {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn record(c: &Cluster, child: Child, tag: &str) -> Participant {
    // Recorded so down.sh stops it even if this test dies.
    std::fs::write(c.dir.join(format!("pids/participant-{tag}-{}.pid", child.id())), child.id().to_string()).unwrap();
    Participant { child }
}

fn controller_runtime(c: &Cluster, ns: &str, lease: &str) -> Participant {
    let child = Command::new(c.bin().join("coord-test-ctrlrt"))
        .args(["-kubeconfig", c.kubeconfig("admin").to_str().unwrap(), "-namespace", ns, "-lease", lease])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("coord-test-ctrlrt (built by tests/cluster/build.sh)");
    record(c, child, "ctrlrt")
}

/// This test binary again, running only `lease_manager_participant`.
fn lease_manager(c: &Cluster, ns: &str, lease: &str, identity: &str) -> Participant {
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lease_manager_participant", "--ignored", "--nocapture", "--test-threads", "1"])
        .env("KUBECONFIG", c.kubeconfig("admin"))
        .env("COORD_PARTICIPANT", format!("{ns}/{lease}/{identity}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    record(c, child, "klm")
}

/// A kube-lease-manager participant: holds `lease` as `identity` until SIGTERM, then
/// releases it. Run only as a child of the tests below.
#[test]
#[ignore = "an election participant, started as a child process by the tests of this file"]
fn lease_manager_participant() {
    use kube_lease_manager::LeaseManagerBuilder;
    let Ok(spec) = std::env::var("COORD_PARTICIPANT") else { return };
    let parts: Vec<&str> = spec.splitn(3, '/').collect();
    let (ns, lease, identity) = (parts[0], parts[1], parts[2]);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let client = kube::Client::try_default().await.unwrap();
        let manager = LeaseManagerBuilder::new(client, lease)
            .with_namespace(ns)
            .with_identity(identity)
            .with_duration(15)
            .with_grace(5)
            .build()
            .await
            .unwrap();
        let (mut channel, task) = manager.watch().await;
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
        loop {
            tokio::select! {
                changed = channel.changed() => if changed.is_err() { break },
                _ = term.recv() => break,
            }
        }
        // Closing the channel makes the manager release the lease and end.
        drop(channel);
        let _ = task.await;
    });
}

/// The lease as `leases NAME -o json` shows it; Null while it does not exist yet.
fn lease_of(c: &Cluster, ns: &str, name: &str) -> Value {
    let run = c.coord("viewer", &["leases", "-n", ns, name, "-o", "json"]);
    if run.code != 0 {
        assert!(run.stderr.contains("not found"), "{}", run.stderr);
        return Value::Null;
    }
    run.json()["leases"][0].clone()
}

fn poll(c: &Cluster, ns: &str, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    wait_for(what, 60, || {
        last = lease_of(c, ns, name);
        check(&last)
    });
    last
}

/// A `leases --watch -o json` on one lease, read line by line in the background.
fn watch(c: &Cluster, ns: &str, name: &str) -> (Child, std::sync::mpsc::Receiver<Value>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-coord"))
        .args(["leases", "-n", ns, name, "--watch", "--watch-timeout", "120s", "-o", "json"])
        .env("KUBECONFIG", c.kubeconfig("viewer"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    (child, rx)
}

/// Waits for the watch to report the lease passing to `to`; returns every event seen.
fn until_held_by(events: &std::sync::mpsc::Receiver<Value>, to: &str) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match events.recv_timeout(left) {
            Ok(e) => {
                let done = e["event"] == "leader-changed" && e["to"] == to;
                seen.push(e);
                if done {
                    return seen;
                }
            }
            Err(_) => panic!("the watch never saw {to} take the lease: {seen:#?}"),
        }
    }
}

/// The managers `fields lease/NAME` names as owners of .spec.holderIdentity.
fn holder_field_owners(c: &Cluster, ns: &str, name: &str) -> Vec<String> {
    let report = c.coord("viewer", &["fields", &format!("lease/{name}"), "-n", ns, "-o", "json"]).ok().json();
    let fields = report["objects"][0]["fields"].as_array().unwrap().clone();
    let row = fields.iter().find(|f| f["path"] == ".spec.holderIdentity").unwrap_or_else(|| panic!("{fields:#?}"));
    row["owners"].as_array().unwrap().iter().map(|o| o["manager"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_controller_runtime_manager_holds_hands_over_and_releases_its_lease() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-ctrlrt");
    let a = controller_runtime(&c, &ns, "ctrlrt-lock");
    let b = controller_runtime(&c, &ns, "ctrlrt-lock");
    let first = poll(&c, &ns, "ctrlrt-lock", "a controller-runtime leader", |l| {
        l["state"] == "fresh" && l["holder"].is_string()
    });
    let holder = first["holder"].as_str().unwrap().to_string();
    assert_eq!(first["class"], "leader-election", "{first:#}");
    assert_eq!(first["leaseDurationSeconds"], 15);
    // controller-runtime names itself <hostname>_<uuid>: a process on this machine, not a pod.
    let (host, uuid) = holder.rsplit_once('_').unwrap();
    assert_eq!(uuid.len(), 36, "{holder}");
    assert_eq!(first["holderPod"]["name"], host);
    assert_eq!(first["holderPod"]["exists"], false);
    let report = c.coord("viewer", &["leases", "-n", &ns, "-o", "json"]).ok().json();
    assert!(report["findings"].as_array().unwrap().is_empty(), "a process outside the cluster is not a gone pod");
    let owners = holder_field_owners(&c, &ns, "ctrlrt-lock");
    assert!(owners.iter().any(|m| m.contains("ctrlrt")), "the manager's field manager: {owners:?}");

    // SIGKILL: the lease runs out (15s) and a new manager takes it; the watch sees it.
    let (mut watcher, events) = watch(&c, &ns, "ctrlrt-lock");
    std::thread::sleep(Duration::from_secs(2));
    // Both die without a word (controller-runtime names its identity itself, so which one
    // leads is not known here); a third manager started afterwards takes the lease over.
    a.signal("-KILL");
    b.signal("-KILL");
    let expired = poll(&c, &ns, "ctrlrt-lock", "the lease to expire", |l| l["state"] == "expired");
    assert_eq!(expired["holder"], holder.as_str());
    // A fresh manager takes over.
    let taker = controller_runtime(&c, &ns, "ctrlrt-lock");
    let taken = poll(&c, &ns, "ctrlrt-lock", "a takeover", |l| l["state"] == "fresh" && l["holder"] != holder.as_str());
    let seen = until_held_by(&events, taken["holder"].as_str().unwrap());
    let kinds: Vec<&str> = seen.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"expired"), "the watch saw the lease run out first: {kinds:?}");
    assert_eq!(seen.last().unwrap()["from"], holder.as_str());
    assert!(taken["leaseTransitions"].as_i64().unwrap() > first["leaseTransitions"].as_i64().unwrap());

    // SIGTERM: controller-runtime releases on the way out (LeaderElectionReleaseOnCancel).
    taker.signal("-TERM");
    assert!(taker.wait(), "the manager ended with an error");
    let released = lease_of(&c, &ns, "ctrlrt-lock");
    assert_eq!(released["state"], "released", "{released:#}");
    let _ = Command::new("kill").args(["-INT", &watcher.id().to_string()]).status();
    let _ = watcher.wait();
}

#[test]
fn kube_lease_manager_holders_resolve_to_their_pods_and_release_by_nulling() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-klm");
    // The participants name themselves after the pods of a Deployment, as a controller
    // running in those pods does (POD_NAME): kwok runs them.
    c.apply(&format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: klm, namespace: {ns}}}\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: klm}}}}\n  template:\n    metadata: {{labels: {{app: klm}}}}\n    spec: {{containers: [{{name: c, image: registry.k8s.io/pause:3.10}}]}}\n"
    ));
    let mut pods: Vec<String> = Vec::new();
    wait_for("two Running pods", 90, || {
        let out = c
            .kubectl(&[
                "-n",
                &ns,
                "get",
                "pods",
                "-l",
                "app=klm",
                "--field-selector=status.phase=Running",
                "-o",
                "name",
            ])
            .ok()
            .stdout;
        pods = out.lines().map(|l| l.trim_start_matches("pod/").to_string()).collect();
        pods.len() == 2
    });
    let a = lease_manager(&c, &ns, "klm-lock", &pods[0]);
    let b = lease_manager(&c, &ns, "klm-lock", &pods[1]);
    let first =
        poll(&c, &ns, "klm-lock", "a kube-lease-manager leader", |l| l["state"] == "fresh" && l["holder"].is_string());
    let holder = first["holder"].as_str().unwrap().to_string();
    assert!(pods.contains(&holder), "{holder}");
    assert_eq!(first["holderPod"]["exists"], true);
    assert_eq!(first["holderPod"]["phase"], "Running");
    assert_eq!(first["holderPod"]["controller"]["kind"], "Deployment");
    assert_eq!(first["holderPod"]["controller"]["name"], "klm");
    let report = c.coord("viewer", &["leases", "-n", &ns, "-o", "json"]).ok().json();
    assert_eq!(report["leadership"][0]["leadingPods"], 1, "{report:#}");
    // One server-side-apply manager per participant. kube-lease-manager derives it from the
    // identity it was built with, which the builder's with_identity does not change: a
    // random "kube-lease-manager-..." name, not the pod's.
    let owners = holder_field_owners(&c, &ns, "klm-lock");
    assert!(owners.len() == 1 && owners[0].starts_with("kube-lease-manager-"), "{owners:?}");

    let (mut watcher, events) = watch(&c, &ns, "klm-lock");
    std::thread::sleep(Duration::from_secs(2));
    let (leader, follower) = if holder == pods[0] { (a, b) } else { (b, a) };
    let other = if holder == pods[0] { pods[1].clone() } else { pods[0].clone() };
    leader.signal("-KILL");
    let taken = poll(&c, &ns, "klm-lock", "the follower's takeover", |l| l["holder"] == other.as_str());
    assert_eq!(taken["state"], "fresh");
    // kube-lease-manager takes a stale lease in two writes, both seen: the taker first
    // nulls the old holder, then writes itself.
    let seen = until_held_by(&events, &other);
    let changes: Vec<(&Value, &Value)> =
        seen.iter().filter(|e| e["event"] == "leader-changed").map(|e| (&e["from"], &e["to"])).collect();
    assert_eq!(changes.first().map(|(f, _)| f.as_str()), Some(Some(holder.as_str())), "{seen:#?}");
    assert_eq!(changes.last().map(|(_, t)| t.as_str()), Some(Some(other.as_str())), "{seen:#?}");

    // SIGTERM: kube-lease-manager releases by nulling the holder.
    follower.signal("-TERM");
    assert!(follower.wait(), "the participant ended with an error");
    let released = poll(&c, &ns, "klm-lock", "the release", |l| l["state"] == "released");
    assert!(released["holder"].is_null(), "{released:#}");
    let _ = Command::new("kill").args(["-INT", &watcher.id().to_string()]).status();
    let _ = watcher.wait();
}
