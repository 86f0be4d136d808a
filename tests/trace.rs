//! `kubectl coord trace` against the real local control plane: chains built by the real
//! Deployment and ReplicaSet controllers, the real scheduler and kwok's nodes (pods that
//! run, and pods no node will take), a rollout traced live
//! while `kubectl rollout restart` runs, the real kube-controller-manager and
//! kube-scheduler frozen with SIGSTOP until their leases expire (the stall names the
//! expired lease; after SIGCONT the chain completes), and a custom resource whose status
//! writer is a process of this test.

mod common;

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use common::{Cluster, cluster, wait_for};
use serde_json::Value;

/// Tests that freeze control-plane processes take this for writing; every other test of
/// this binary reads, so none runs while the controllers are frozen.
static CONTROL_PLANE: RwLock<()> = RwLock::new(());

fn deployment(c: &Cluster, ns: &str, name: &str, replicas: u32) {
    c.apply(&format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers:\n      - {{name: c, image: registry.k8s.io/pause:3.10}}\n"
    ));
}

fn pod_names(c: &Cluster, ns: &str, app: &str) -> Vec<String> {
    let out = c.kubectl(&["-n", ns, "get", "pods", "-l", &format!("app={app}"), "-o", "name"]).ok().stdout;
    out.lines().map(|l| l.trim_start_matches("pod/").to_string()).collect()
}

fn hops<'a>(report: &'a Value, reference: &str, kind: &str) -> Vec<&'a Value> {
    report["hops"].as_array().unwrap().iter().filter(|h| h["ref"] == reference && h["kind"] == kind).collect()
}

#[test]
fn a_new_deployments_chain_has_every_hop_with_its_writer_in_time_order() {
    let _running = CONTROL_PLANE.read().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let ns = c.fresh_namespace("trace-chain");
    deployment(&c, &ns, "web", 2);
    wait_for("two pods Running on kwok's nodes and their Scheduled events", 90, || {
        let events = c.kubectl(&["-n", &ns, "get", "events", "-o", "json"]).ok().json();
        let scheduled = events["items"].as_array().unwrap().iter().filter(|e| e["reason"] == "Scheduled").count();
        let phases = c
            .kubectl(&["-n", &ns, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].status.phase}"])
            .ok()
            .stdout;
        phases.split_whitespace().filter(|p| *p == "Running").count() == 2 && scheduled >= 2
    });

    // Through kubectl's plugin discovery, as a user runs it.
    let run = c.kubectl_plugin("viewer", &["trace", "deploy/web", "-n", &ns, "-o", "json", "--stall-after", "1h"]).ok();
    let report = run.json();
    assert_eq!(report["kind"], "Trace");
    assert_eq!(report["complete"], true);
    let objects = report["objects"].as_array().unwrap();
    assert_eq!(objects[0]["ref"], "deployment.apps/web");
    let rs: Vec<&Value> = objects.iter().filter(|o| o["kind"] == "ReplicaSet").collect();
    assert_eq!(rs.len(), 1, "{objects:#?}");
    assert_eq!(rs[0]["parent"], 0);
    let rs_ref = rs[0]["ref"].as_str().unwrap().to_string();
    let rs_index = objects.iter().position(|o| o["ref"] == rs_ref).unwrap();
    let pods: Vec<&Value> = objects.iter().filter(|o| o["kind"] == "Pod").collect();
    assert_eq!(pods.len(), 2);
    assert!(pods.iter().all(|p| p["parent"] == rs_index), "{pods:#?}");

    let all = report["hops"].as_array().unwrap();
    // Monotone times, and every cause at or before its effect (whole seconds).
    let seconds = |h: &Value| h["time"].as_str().and_then(|t| t.get(..19)).map(str::to_string);
    for pair in all.windows(2) {
        if let (Some(a), Some(b)) = (pair[0]["time"].as_str(), pair[1]["time"].as_str()) {
            assert!(a.get(..19) <= b.get(..19), "hops out of order: {a} then {b}");
        }
    }
    for h in all {
        if let Some(c) = h["cause"].as_u64() {
            assert!(seconds(&all[c as usize]) <= seconds(h), "cause after effect: {h}");
        }
    }
    // The ReplicaSet was created by the Deployment controller, caused by the Deployment.
    let created = hops(&report, &rs_ref, "created");
    assert_eq!(created.len(), 1);
    let writer = created[0]["writer"].as_str().unwrap();
    assert_eq!(writer, "kube-controller-manager [deployment-controller]");
    assert_eq!(all[created[0]["cause"].as_u64().unwrap() as usize]["ref"], "deployment.apps/web");
    assert_eq!(created[0]["lag"]["plusMinusMillis"], 1000, "whole-second times give ±1s lags");
    assert_eq!(created[0]["source"], "creationTimestamp");
    // Each pod: created by the ReplicaSet controller, placed by the scheduler, started by
    // its node (kwok writes the status a kubelet would).
    for pod in &pods {
        let pod_ref = pod["ref"].as_str().unwrap();
        let created = hops(&report, pod_ref, "created");
        assert_eq!(created[0]["writer"], "kube-controller-manager [replicaset-controller]");
        assert_eq!(all[created[0]["cause"].as_u64().unwrap() as usize]["ref"], rs_ref.as_str());
        let events = hops(&report, pod_ref, "event");
        let placed = events.iter().find(|e| e["what"].as_str().unwrap().starts_with("Scheduled")).expect("event");
        assert_eq!(placed["writer"], "default-scheduler");
        assert_eq!(placed["precision"], "microsecond", "the scheduler's events.k8s.io eventTime");
        assert!(placed["what"].as_str().unwrap().contains("to kwok-node-"), "{placed}");
        let status = hops(&report, pod_ref, "status");
        assert!(status.iter().any(|h| h["writer"] == "kwok (status)" && h["what"] == "phase Running"), "{status:#?}");
    }
    // The Deployment controller observed the generation it was given.
    let observed = hops(&report, "deployment.apps/web", "status");
    assert!(observed.iter().any(|h| h["what"] == "observed generation 1"), "{observed:#?}");
    assert!(report["stalls"].as_array().unwrap().is_empty(), "nothing is older than 1h");
    assert!(report["signals"].as_array().unwrap().iter().any(|s| s.as_str().unwrap().contains("whole seconds")));

    // The same in the table, and in Chrome's trace-event format.
    let table = c.coord("viewer", &["trace", "deployment", "web", "-n", &ns, "--stall-after", "1h"]).ok().stdout;
    assert!(table.contains("TIME") && table.contains("WRITER") && table.contains("No stalls"), "{table}");
    assert!(table.contains(&format!("  {rs_ref}")), "dependents are indented under their owner: {table}");
    let chrome: Value =
        serde_json::from_str(&c.coord("viewer", &["trace", "deploy/web", "-n", &ns, "-o", "chrome"]).ok().stdout)
            .unwrap();
    let tracks: BTreeSet<&str> = chrome["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert!(
        tracks.contains("default-scheduler") && tracks.contains("kube-controller-manager [replicaset-controller]"),
        "{tracks:?}"
    );

    // Running pods owe nothing: no stall even past a short --stall-after.
    std::thread::sleep(Duration::from_secs(2));
    c.coord("viewer", &["trace", "deploy/web", "-n", &ns, "--stall-after", "1s", "--exit-code"]).code(0);

    // Pods no node will take (a nodeSelector none matches) stay unscheduled for longer
    // than --stall-after: stalls, exit 3, with the scheduler's own word on why.
    c.apply(&format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: stuck, namespace: {ns}}}\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: stuck}}}}\n  template:\n    metadata: {{labels: {{app: stuck}}}}\n    spec:\n      nodeSelector: {{coord.test/nowhere: \"true\"}}\n      containers:\n      - {{name: c, image: registry.k8s.io/pause:3.10}}\n"
    ));
    wait_for("two FailedScheduling events", 90, || {
        let events = c.kubectl(&["-n", &ns, "get", "events", "-o", "json"]).ok().json();
        events["items"].as_array().unwrap().iter().filter(|e| e["reason"] == "FailedScheduling").count() >= 2
    });
    std::thread::sleep(Duration::from_secs(2));
    let stalled = c
        .coord("viewer", &["trace", "deploy/stuck", "-n", &ns, "--stall-after", "1s", "--exit-code", "-o", "json"])
        .code(3);
    let stalls = stalled.json()["stalls"].as_array().unwrap().clone();
    assert_eq!(stalls.len(), 2, "{stalls:#?}");
    for s in &stalls {
        assert_eq!(s["kind"], "unscheduled");
        assert_eq!(s["lease"]["name"], "kube-scheduler");
        assert_eq!(s["lease"]["state"], "fresh");
        assert!(s["evidence"][0].as_str().unwrap().starts_with("FailedScheduling (default-scheduler"), "{s}");
        assert!(s["message"].as_str().unwrap().contains("the leader runs and says why it cannot proceed"), "{s}");
    }
}

#[test]
fn a_rollout_traced_live_names_the_new_replicaset_and_its_pods_in_order() {
    let _running = CONTROL_PLANE.read().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let ns = c.fresh_namespace("trace-live");
    deployment(&c, &ns, "web", 2);
    wait_for("two pods", 90, || pod_names(&c, &ns, "web").len() == 2);
    let before: BTreeSet<String> =
        c.kubectl(&["-n", &ns, "get", "rs", "-o", "name"]).ok().stdout.lines().map(str::to_string).collect();

    let kubectl = c.bin().join("kubectl");
    let kubeconfig = c.kubeconfig("admin");
    let started = Instant::now();
    let run = c
        .coord(
            "viewer",
            &[
                "trace",
                "deploy/web",
                "-n",
                &ns,
                "-o",
                "json",
                "--settle",
                "3s",
                "--watch-timeout",
                "90s",
                "--",
                kubectl.to_str().unwrap(),
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
                "-n",
                &ns,
                "rollout",
                "restart",
                "deploy/web",
            ],
        )
        .ok();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(60), "the trace should end at quiescence, took {took:?}");
    assert!(run.stderr.contains("restarted"), "the command's output goes to stderr: {}", run.stderr);
    let lines: Vec<Value> =
        run.stdout.lines().map(|l| serde_json::from_str(l).expect("one JSON object per line")).collect();
    let (summary, reactions) = lines.split_last().unwrap();
    assert_eq!(summary["kind"], "TraceSummary");
    common::schema::conforms(summary);
    let spec = reactions
        .iter()
        .position(|r| r["who"] == "kubectl-rollout" && r["what"] == "spec, generation 2")
        .expect("the restart");
    let new_rs = reactions
        .iter()
        .position(|r| r["what"] == "created" && r["object"].as_str().unwrap().starts_with("replicaset.apps/web-"))
        .expect("a new ReplicaSet");
    let rs_name = reactions[new_rs]["object"].as_str().unwrap().to_string();
    assert!(!before.contains(&rs_name), "{rs_name} existed before the restart");
    assert!(spec < new_rs);
    assert_eq!(reactions[new_rs]["who"], "kube-controller-manager");
    assert_eq!(reactions[new_rs]["cause"], "deployment.apps/web spec, generation 2");
    assert!(reactions[new_rs]["lagMs"].as_i64().unwrap() >= 0);
    let rs_short = rs_name.trim_start_matches("replicaset.apps/");
    let pods: Vec<usize> = reactions
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r["what"] == "created" && r["object"].as_str().unwrap().starts_with(&format!("pod/{rs_short}-"))
        })
        .map(|(i, _)| i)
        .collect();
    assert!(!pods.is_empty(), "the new ReplicaSet's pods: {reactions:#?}");
    assert!(pods.iter().all(|&p| p > new_rs), "pods are created after their ReplicaSet");
    for &p in &pods {
        // Caused by the ReplicaSet's creation, or by the scale-up the Deployment controller
        // wrote into it (with kwok's nodes the rollout moves on at once).
        let cause = reactions[p]["cause"].as_str().unwrap();
        assert!(
            cause == format!("{rs_name} created") || cause.starts_with(&format!("{rs_name} spec, generation ")),
            "{cause}"
        );
    }
    let writers: Vec<&str> =
        summary["writers"].as_array().unwrap().iter().map(|w| w["who"].as_str().unwrap()).collect();
    assert!(writers.contains(&"kube-controller-manager") && writers.contains(&"kubectl-rollout"), "{writers:?}");
    assert_eq!(summary["trace"]["kind"], "Trace");
}

/// Freezes a control-plane process; thaws it when dropped, even if the test fails.
struct Frozen<'a> {
    c: &'a Cluster,
    name: &'static str,
    pid: String,
}

impl<'a> Frozen<'a> {
    fn new(c: &'a Cluster, name: &'static str) -> Frozen<'a> {
        let pid = std::fs::read_to_string(c.dir.join(format!("pids/{name}.pid"))).unwrap().trim().to_string();
        assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
        Frozen { c, name, pid }
    }

    fn thaw(&self) {
        let _ = Command::new("kill").args(["-CONT", &self.pid]).status();
    }
}

impl Drop for Frozen<'_> {
    fn drop(&mut self) {
        self.thaw();
        // Hand the cluster on with a live leader again.
        let lease_fresh = || {
            let out = self.c.coord("admin", &["leases", "-n", "kube-system", self.name, "-o", "json"]);
            out.code == 0 && out.json()["leases"][0]["state"] == "fresh"
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !lease_fresh() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(500));
        }
        let alive = Command::new("kill").args(["-0", &self.pid]).status().unwrap().success();
        assert!(alive || std::thread::panicking(), "{} did not survive SIGSTOP/SIGCONT", self.name);
    }
}

#[test]
fn a_stopped_controller_manager_and_scheduler_are_named_with_their_expired_leases() {
    let _frozen = CONTROL_PLANE.write().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let ns = c.fresh_namespace("trace-stall");
    deployment(&c, &ns, "web", 1);
    wait_for("the Deployment observed", 90, || {
        let d = c.kubectl(&["-n", &ns, "get", "deploy", "web", "-o", "json"]).ok().json();
        d["status"]["observedGeneration"] == 1 && pod_names(&c, &ns, "web").len() == 1
    });

    let kcm = Frozen::new(&c, "kube-controller-manager");
    let scheduler = Frozen::new(&c, "kube-scheduler");
    // Both leases last 15s: wait until neither leader can hold its lease.
    wait_for("both leases to expire", 60, || {
        let v = c.coord("viewer", &["leases", "-n", "kube-system", "-o", "json"]).ok().json();
        let state =
            |n: &str| v["leases"].as_array().unwrap().iter().find(|l| l["name"] == n).map(|l| l["state"].clone());
        state("kube-controller-manager") == Some("expired".into()) && state("kube-scheduler") == Some("expired".into())
    });
    // A new generation for the frozen Deployment controller, a new pod for the frozen scheduler.
    c.kubectl(&[
        "-n",
        &ns,
        "patch",
        "deploy",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"template":{"metadata":{"annotations":{"step":"2"}}}}}"#,
    ])
    .ok();
    c.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: lone, namespace: {ns}}}\nspec:\n  containers:\n  - {{name: c, image: registry.k8s.io/pause:3.10}}\n"
    ));
    std::thread::sleep(Duration::from_secs(4));

    let run = c
        .coord("viewer", &["trace", "deploy/web", "-n", &ns, "--stall-after", "2s", "--exit-code", "-o", "json"])
        .code(3);
    let stalls = run.json()["stalls"].as_array().unwrap().clone();
    let generation =
        stalls.iter().find(|s| s["kind"] == "generation-not-observed").unwrap_or_else(|| panic!("{stalls:#?}"));
    assert_eq!(generation["ref"], "deployment.apps/web");
    assert_eq!(generation["what"], "generation 2 not observed (observed 1)");
    assert_eq!(generation["lease"]["name"], "kube-controller-manager");
    assert_eq!(generation["lease"]["state"], "expired");
    let message = generation["message"].as_str().unwrap();
    assert!(
        message.contains("the Deployment controller runs in kube-controller-manager, whose lease kube-system/kube-controller-manager expired")
            && message.ends_with("ago: no leader"),
        "{message}"
    );
    let table = c.coord("viewer", &["trace", "deploy/web", "-n", &ns, "--stall-after", "2s"]).ok().stdout;
    assert!(table.contains("deployment.apps/web CO501 generation-not-observed: generation 2 not observed"), "{table}");

    let lone = c.coord("viewer", &["trace", "pod/lone", "-n", &ns, "--stall-after", "2s", "-o", "json"]).ok().json();
    let unscheduled = &lone["stalls"][0];
    assert_eq!(unscheduled["kind"], "unscheduled");
    assert_eq!(unscheduled["lease"]["name"], "kube-scheduler");
    assert_eq!(unscheduled["lease"]["state"], "expired");
    assert!(unscheduled["evidence"].as_array().unwrap().is_empty(), "a frozen scheduler says nothing: {unscheduled}");
    assert!(
        unscheduled["message"]
            .as_str()
            .unwrap()
            .contains("the scheduler runs in kube-scheduler, whose lease kube-system/kube-scheduler expired")
    );

    // Thawed, the controllers take their leases back and finish the chain.
    kcm.thaw();
    scheduler.thaw();
    wait_for("the new generation observed", 90, || {
        let v = c.coord("viewer", &["trace", "deploy/web", "-n", &ns, "--stall-after", "2s", "-o", "json"]).ok().json();
        v["stalls"].as_array().unwrap().iter().all(|s| s["kind"] != "generation-not-observed")
    });
    wait_for("the lone pod placed and running", 90, || {
        let v = c.coord("viewer", &["trace", "pod/lone", "-n", &ns, "--stall-after", "2s", "-o", "json"]).ok().json();
        let placed = v["hops"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["what"].as_str().is_some_and(|w| w.starts_with("Scheduled")));
        v["stalls"].as_array().unwrap().is_empty() && placed
    });
    drop(scheduler);
    drop(kcm);
}

#[test]
fn a_custom_resource_whose_status_writer_went_quiet_is_a_stall_of_that_writer() {
    let _running = CONTROL_PLANE.read().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let ns = c.fresh_namespace("trace-cr");
    c.apply(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: tracegadgets.trace.coord.test}\nspec:\n  group: trace.coord.test\n  scope: Namespaced\n  names: {plural: tracegadgets, singular: tracegadget, kind: TraceGadget}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    subresources: {status: {}}\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n",
    );
    wait_for("the TraceGadget CRD to be served", 60, || {
        c.kubectl(&["get", "tracegadgets.trace.coord.test", "-A"]).code == 0
    });
    // The operator is this test, writing status through /status under its own manager name.
    let operator = format!("gadget-operator-{}", &ns[ns.len() - 6..]);
    c.apply(&format!(
        "apiVersion: trace.coord.test/v1\nkind: TraceGadget\nmetadata: {{name: g, namespace: {ns}}}\nspec: {{size: 1}}\n"
    ));
    let write_status = |generation: u32| {
        let patch = format!(r#"{{"status":{{"observedGeneration":{generation}}}}}"#);
        c.kubectl(&[
            "-n",
            &ns,
            "patch",
            "tracegadget",
            "g",
            "--subresource=status",
            "--type=merge",
            "--field-manager",
            &operator,
            "-p",
            &patch,
        ])
        .ok();
    };
    write_status(1);
    // Its lease, as an election library would leave it after the process stopped renewing.
    c.apply(&common::lease_yaml(&ns, &operator, &format!("{operator}-7d9f_1234"), 15, Some(-120), 0));
    c.kubectl(&["-n", &ns, "patch", "tracegadget", "g", "--type=merge", "-p", r#"{"spec":{"size":2}}"#]).ok();
    std::thread::sleep(Duration::from_secs(3));

    let v = c.coord("viewer", &["trace", "tracegadget/g", "-n", &ns, "--stall-after", "1s", "-o", "json"]).ok().json();
    let s = &v["stalls"][0];
    assert_eq!(s["kind"], "generation-not-observed", "{v:#}");
    assert_eq!(s["responsible"]["controller"], format!("its status writer {operator} (status)"));
    assert_eq!(s["lease"]["name"], operator.as_str());
    assert_eq!(s["lease"]["state"], "expired");
    assert!(s["message"].as_str().unwrap().ends_with("no leader"), "{s}");
    let status = hops(&v, "tracegadget.trace.coord.test/g", "status");
    assert_eq!(status[0]["writer"], format!("{operator} (status)"));

    // The writer catches up: the stall clears.
    write_status(2);
    let v = c
        .coord("viewer", &["trace", "tracegadget/g", "-n", &ns, "--stall-after", "1s", "--exit-code", "-o", "json"])
        .ok()
        .json();
    assert!(v["stalls"].as_array().unwrap().is_empty(), "{v:#}");
}

#[test]
fn partial_access_is_reported_and_bad_input_is_one_line() {
    let _running = CONTROL_PLANE.read().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let ns = c.limited_namespace();
    let name = format!("trace-limited-{}", std::process::id());
    deployment(&c, &ns, &name, 1);
    wait_for("the limited namespace's pod", 90, || pod_names(&c, &ns, &name).len() == 1);
    // Its namespace holds the whole tree below a namespaced root, and this user may read it.
    let run = c.coord("limited", &["trace", &format!("deploy/{name}"), "-o", "json"]).ok();
    let v = run.json();
    assert_eq!(v["complete"], true, "{}", run.stderr);
    assert!(v["objects"].as_array().unwrap().iter().any(|o| o["kind"] == "Pod"), "{v}");
    // Across every namespace, which this user may not list: the rest is said to be missing.
    let run = c.coord("limited", &["trace", &format!("deploy/{name}"), "-A", "-o", "json"]).ok();
    let v = run.json();
    assert_eq!(v["complete"], false, "listing across namespaces is forbidden to this user");
    assert!(v["skipped"].as_array().unwrap().iter().any(|s| s["reason"] == "forbidden"));
    assert!(v["objects"].as_array().unwrap().iter().any(|o| o["kind"] == "Pod"), "what was readable is shown");
    assert!(run.stderr.contains("warning: not listed, forbidden"), "{}", run.stderr);

    for (args, needle) in [
        (vec!["trace"], "no object given"),
        (vec!["trace", "deploy/a", "deploy/b"], "trace takes one object"),
        (vec!["trace", "deploy/a", "--watch-timeout", "5s"], "--watch-timeout needs --watch"),
        (vec!["trace", "deploy/a", "--stall-after", "soon"], "--stall-after"),
        (vec!["trace", "nosuchtype/a"], "nosuchtype"),
        (vec!["leases", "-o", "chrome"], "-o chrome is for trace only"),
    ] {
        let run = c.coord("viewer", &args).code(2);
        run.one_line_error(needle);
    }
    c.coord("viewer", &["trace", "deploy/absent-one", "-n", &ns]).code(1).one_line_error("\"absent-one\" not found");
}

#[test]
fn secrets_configmaps_and_services_a_workload_owns_are_traced_to_their_writer() {
    let _running = CONTROL_PLANE.read().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let ns = c.fresh_namespace("trace-writers");
    deployment(&c, &ns, "web", 1);
    let uid = c.kubectl(&["-n", &ns, "get", "deploy/web", "-o", "jsonpath={.metadata.uid}"]).ok().stdout;
    let owner = format!(
        "ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: web, uid: {uid}, controller: true}}]"
    );
    let manifest = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: web-creds, namespace: {ns}, {owner}}}\nstringData: {{token: x}}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: web-config, namespace: {ns}, {owner}}}\ndata: {{mode: fast}}\n---\n\
         apiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: {ns}, {owner}}}\nspec: {{selector: {{app: web}}, ports: [{{port: 80}}]}}\n"
    );
    let path = std::env::temp_dir().join(format!("coord-trace-writers-{}.yaml", std::process::id()));
    std::fs::write(&path, manifest).unwrap();
    c.kubectl(&["apply", "--field-manager=my-operator", "-f", path.to_str().unwrap()]).ok();

    let report = c.kubectl_plugin("viewer", &["trace", "deploy/web", "-n", &ns, "-o", "json"]).ok().json();
    for reference in ["secret/web-creds", "configmap/web-config", "service/web"] {
        let created = hops(&report, reference, "created");
        assert_eq!(created.len(), 1, "{reference}: {report}");
        assert_eq!(created[0]["writer"], "my-operator", "{reference}");
    }
    // Secrets are read as metadata only, never their data.
    assert!(!report.to_string().contains("\"token\""), "{report}");
}
