//! `kubectl coord check` against the real control plane: one namespace broken in each
//! mechanism's way (an expired lock, two Deployments with one selector whose pods no node
//! can take, a reference cycle, a GitOps apply fought by `kubectl scale`), checked in
//! one run and compared with what each command finds on its own; each list read once;
//! partial access reported as skipped; bad input refused on one line.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{Cluster, cluster, lease_yaml, wait_for};
use serde_json::Value;

/// A Deployment whose pods ask for a node label no node has: they stay unscheduled
/// whatever nodes the cluster has.
fn pinned_deployment(name: &str, ns: &str, app: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {app}}}}}\n  template:\n    metadata: {{labels: {{app: {app}}}}}\n    spec:\n      nodeSelector: {{coord.test/nowhere: \"true\"}}\n      containers:\n      - {{name: c, image: registry.k8s.io/pause:3.10}}\n"
    )
}

fn uid(c: &Cluster, ns: &str, what: &str) -> String {
    c.kubectl(&["-n", ns, "get", what, "-o", "jsonpath={.metadata.uid}"]).ok().stdout
}

/// One namespace with a finding for every mechanism; returns it once the controllers
/// have done what they will do.
fn broken_namespace(c: &Cluster) -> String {
    let ns = c.fresh_namespace("coord-check");
    c.apply(&lease_yaml(&ns, "stale-lock", "gone-7f9c4d8b6-abcde_1234", 15, Some(-600), 3));
    c.apply(&format!(
        "{}---\n{}",
        pinned_deployment("shop-a", &ns, "shop", 1),
        pinned_deployment("shop-b", &ns, "shop", 1)
    ));
    c.apply(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cycle-a, namespace: {ns}}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cycle-b, namespace: {ns}}}\n"
    ));
    let (a, b) = (uid(c, &ns, "cm/cycle-a"), uid(c, &ns, "cm/cycle-b"));
    for (name, owner, owner_uid) in [("cycle-a", "cycle-b", &b), ("cycle-b", "cycle-a", &a)] {
        let patch = format!(
            r#"{{"metadata":{{"ownerReferences":[{{"apiVersion":"v1","kind":"ConfigMap","name":"{owner}","uid":"{owner_uid}"}}]}}}}"#
        );
        c.kubectl(&["-n", &ns, "patch", "cm", name, "--type=merge", "-p", &patch]).ok();
    }
    let web = pinned_deployment("web", &ns, "web", 1);
    let path = c.dir.join(format!("{ns}-web.yaml"));
    std::fs::write(&path, web).unwrap();
    c.kubectl(&["apply", "--server-side", "--field-manager=gitops", "-f", path.to_str().unwrap()]).ok();
    c.kubectl(&["-n", &ns, "scale", "deployment", "web", "--replicas=2"]).ok();
    // Two budgets over web's two pods: no drain can evict either.
    for pdb in ["pdb-a", "pdb-b"] {
        c.apply(&format!(
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: {pdb}, namespace: {ns}}}\nspec: {{minAvailable: 1, selector: {{matchLabels: {{app: web}}}}}}\n"
        ));
    }
    wait_for("four unscheduled pods", 90, || {
        let pods = c.kubectl(&["-n", &ns, "get", "pods", "-o", "json"]).ok().json();
        pods["items"].as_array().unwrap().len() == 4
    });
    // Work outstanding for longer than --stall-after 2s.
    std::thread::sleep(std::time::Duration::from_secs(3));
    ns
}

fn by_mechanism(report: &Value) -> BTreeMap<String, BTreeSet<(String, String)>> {
    let mut out: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for f in report["findings"].as_array().unwrap() {
        out.entry(f["mechanism"].as_str().unwrap().to_string())
            .or_default()
            .insert((f["reason"].as_str().unwrap().to_string(), f["object"].as_str().unwrap().to_string()));
    }
    out
}

fn count(report: &Value, mechanism: &str) -> usize {
    report["findings"].as_array().unwrap().iter().filter(|f| f["mechanism"] == mechanism).count()
}

#[test]
fn one_run_finds_each_mechanisms_problem_as_each_command_does() {
    let c = cluster();
    let ns = broken_namespace(&c);
    let rs_of_web = c.kubectl(&["-n", &ns, "get", "rs", "-l", "app=web", "-o", "name"]).ok().stdout;
    let rs_of_web = rs_of_web.trim().trim_start_matches("replicaset.apps/").to_string();

    // Through kubectl's plugin discovery, as a user runs it.
    let all = ["check", "-n", &ns, "-o", "json", "--stall-after", "2s", "--min-severity", "info"];
    let report = c.kubectl_plugin("viewer", &all).ok().json();
    assert_eq!(report["kind"], "CheckReport");
    assert_eq!(report["apiVersion"], "coord.kubectl.io/v1alpha1");
    assert_eq!(report["namespace"], ns.as_str());
    assert_eq!(report["complete"], true, "{report:#}");
    let names: Vec<&str> =
        report["mechanisms"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["leases", "owners", "overlaps", "fields", "trace"]);
    let found = by_mechanism(&report);
    let has = |m: &str, reason: &str, object: &str| {
        found.get(m).is_some_and(|s| s.contains(&(reason.to_string(), object.to_string())))
    };
    assert!(has("leases", "expired", "lease/stale-lock"), "{found:#?}");
    assert!(
        has("owners", "reference-cycle", "configmap/cycle-a") || has("owners", "reference-cycle", "configmap/cycle-b"),
        "{found:#?}"
    );
    assert!(has("overlaps", "selectors-overlap", "deployment.apps/shop-a"), "{found:#?}");
    assert!(has("fields", "update-inside-apply", "deployment.apps/web"), "{found:#?}");
    // web's two pods under both budgets: one finding on the first budget, not one per pod.
    let budgets: Vec<&Value> =
        report["findings"].as_array().unwrap().iter().filter(|f| f["reason"] == "several-disruption-budgets").collect();
    assert_eq!(budgets.len(), 1, "{budgets:#?}");
    assert_eq!(budgets[0]["object"], "poddisruptionbudget.policy/pdb-a");
    let message = budgets[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("2 pods (web-") && message.contains("2 PodDisruptionBudgets (pdb-a, pdb-b)"),
        "{message}"
    );
    // The three pods of web's ReplicaSet with no node: one finding on the ReplicaSet,
    // joined with the real scheduler's lease, which is fresh.
    assert!(has("trace", "unscheduled", &format!("replicaset.apps/{rs_of_web}")), "{found:#?}");
    let stall = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["object"] == format!("replicaset.apps/{rs_of_web}").as_str())
        .unwrap();
    let message = stall["message"].as_str().unwrap();
    assert!(message.starts_with("2 pods with no node"), "{message}");
    assert!(message.contains("kube-system/kube-scheduler is fresh"), "{message}");
    assert_eq!(stall["severity"], "error");
    assert_eq!(stall["detail"], format!("kubectl coord trace replicaset.apps/{rs_of_web} -n {ns}").as_str());
    let detail_of = |object: &str| {
        report["findings"].as_array().unwrap().iter().find(|f| f["object"] == object).unwrap()["detail"].clone()
    };
    assert_eq!(detail_of("lease/stale-lock"), format!("kubectl coord leases stale-lock -n {ns}").as_str());
    assert_eq!(detail_of("deployment.apps/web"), format!("kubectl coord fields deployment.apps/web -n {ns}").as_str());

    // The same findings as each command on its own, read from the same server.
    let leases = c.coord("viewer", &["leases", "-n", &ns, "-o", "json"]).ok().json();
    assert_eq!(count(&report, "leases"), leases["findings"].as_array().unwrap().len());
    let owners = c.coord("viewer", &["owners", "--all", "-n", &ns, "-o", "json"]).ok().json();
    assert_eq!(count(&report, "owners"), owners["findings"].as_array().unwrap().len());
    let overlaps = c.coord("viewer", &["overlaps", "-n", &ns, "-o", "json"]).ok().json();
    // Pods under the same budgets are one finding in check, one conflict each in overlaps.
    let budget_sets: std::collections::BTreeSet<String> =
        overlaps["pdbConflicts"].as_array().unwrap().iter().map(|c| c["budgets"].to_string()).collect();
    assert!(!budget_sets.is_empty(), "{overlaps:#}");
    assert_eq!(count(&report, "overlaps"), overlaps["findings"].as_array().unwrap().len() + budget_sets.len());
    let census = c.coord("viewer", &["fields", "-n", &ns, "-o", "json"]).ok().json();
    assert_eq!(count(&report, "fields"), census["contested"].as_array().unwrap().len(), "{census:#}");
    let trace = c.coord("viewer", &["trace", "deploy/web", "-n", &ns, "--stall-after", "2s", "-o", "json"]).ok().json();
    let unscheduled = trace["stalls"].as_array().unwrap().iter().filter(|s| s["kind"] == "unscheduled").count();
    assert_eq!(unscheduled, 2, "{trace:#}");

    // Severity floor, --only, exit codes.
    let errors = c
        .coord("viewer", &["check", "-n", &ns, "-o", "json", "--stall-after", "2s", "--min-severity", "error"])
        .ok()
        .json();
    assert!(errors["findings"].as_array().unwrap().iter().all(|f| f["severity"] == "error"));
    assert!(count(&errors, "fields") == 0 && count(&errors, "leases") == 1, "{errors:#}");
    let only = c.coord("viewer", &["check", "-n", &ns, "--only", "fields,leases", "-o", "json"]).ok().json();
    let names: Vec<&str> = only["mechanisms"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["leases", "fields"]);
    c.coord("viewer", &["check", "-n", &ns, "--exit-code"]).code(3);
    c.coord("viewer", &["check", "-n", &ns, "--only", "fields", "--min-severity", "error", "--exit-code"]).code(0);

    // For people: the findings under their namespace and object, then a line per mechanism.
    let text = c.coord("viewer", &["check", "-n", &ns, "--stall-after", "2s"]).ok().stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], ns, "{text}");
    assert!(lines.contains(&"  lease/stale-lock") && text.contains("    error    CO101  "), "{text}");
    assert!(text.contains("kubectl coord leases stale-lock -n"), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("trace: ") && l.ends_with("3 errors")), "{text}");
    // -o wide: one row per finding, most severe first, to grep and sort.
    let text = c.coord("viewer", &["check", "-n", &ns, "--stall-after", "2s", "-o", "wide"]).ok().stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("SEVERITY") && lines[0].trim_end().ends_with("DETAIL"), "{text}");
    assert!(lines[1].starts_with("error"), "{text}");

    // In a real terminal of 80, 100 and 120 columns, colour on: every human view of every
    // command is exactly what it prints piped at that width with colour off (a painted
    // finding was once wrapped twice, its colour codes counted as columns), and check shows
    // every finding (its object and code).
    let report = c.coord("viewer", &["check", "-n", &ns, "--stall-after", "2s", "-o", "json"]).ok().json();
    let ns = ns.as_str();
    for width in [80, 100, 120] {
        let (shown, painted) = common::screen::assert_screen_is_the_plain_view(
            &c,
            "viewer",
            width,
            &["check", "-n", ns, "--stall-after", "2s"],
        );
        assert!(painted, "check in a terminal is in colour");
        for f in report["findings"].as_array().unwrap() {
            let (object, code) = (f["object"].as_str().unwrap(), f["code"].as_str().unwrap());
            assert!(shown.contains(&format!("\n  {object}\n")), "{object} not shown at {width}:\n{shown}");
            assert!(shown.contains(&format!(" {code} ")), "{code} not shown at {width}:\n{shown}");
        }
        for view in [vec![], vec!["-o", "wide"]] {
            for args in [
                vec!["check", "-A"],
                vec!["leases", "-A"],
                vec!["leases", "-n", ns],
                vec!["overlaps", "-n", ns],
                vec!["overlaps", "-A"],
                vec!["owners", "deploy/web", "-n", ns],
                vec!["owners", "--all", "-n", ns],
                vec!["fields", "deploy/web", "-n", ns],
                vec!["fields", "deploy/web", "-n", ns, "--by-manager"],
                vec!["fields", "-n", ns],
                vec!["trace", "deploy/web", "-n", ns, "--stall-after", "2s"],
                vec!["version"],
            ] {
                let args = [args, view.clone()].concat();
                common::screen::assert_screen_is_the_plain_view(&c, "viewer", width, &args);
            }
        }
    }

    // JUnit: a suite per mechanism; the failures carry the findings.
    let xml = c.coord("viewer", &["check", "-n", ns, "-o", "junit", "--stall-after", "2s"]).ok().stdout;
    assert!(xml.starts_with("<?xml version=\"1.0\""), "{xml}");
    for m in ["leases", "owners", "overlaps", "fields", "trace"] {
        assert!(xml.contains(&format!("<testsuite name=\"{m}\"")), "{xml}");
    }
    assert!(xml.contains("<testcase name=\"Lease (1 checked)\" classname=\"coord.leases\">"), "{xml}");
    assert!(xml.contains("lease/stale-lock: last renewed"), "{xml}");
    assert_eq!(xml.matches("<failure ").count(), xml.matches("</failure>").count());
}

/// A ReplicaSet the quota keeps from making its pods is short of them, in check as in trace.
/// check reads ReplicaSets from a list, whose items carry no kind: it once looked for what
/// a ReplicaSet asks for before it knew the object was one, and never found this stall.
#[test]
fn a_replicaset_short_of_pods_is_a_stall_in_check_as_in_trace() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-check-short");
    c.apply(&format!(
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {{name: no-pods, namespace: {ns}}}\nspec: {{hard: {{pods: \"0\"}}}}\n"
    ));
    c.apply(&format!(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: short, namespace: {ns}}}\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: short}}}}\n  template:\n    metadata: {{labels: {{app: short}}}}\n    spec: {{containers: [{{name: c, image: registry.k8s.io/pause:3.10}}]}}\n"
    ));
    wait_for("the quota to refuse the ReplicaSet's pods", 60, || {
        let events = c.kubectl(&["-n", &ns, "get", "events", "-o", "json"]).ok().json();
        events["items"].as_array().unwrap().iter().any(|e| e["reason"] == "FailedCreate")
    });
    std::thread::sleep(std::time::Duration::from_secs(3));
    let trace = c.coord("viewer", &["trace", "rs/short", "-n", &ns, "--stall-after", "2s", "-o", "json"]).ok().json();
    let short: Vec<&Value> =
        trace["stalls"].as_array().unwrap().iter().filter(|s| s["kind"] == "replicas-short").collect();
    assert_eq!(short.len(), 1, "{trace:#}");
    assert_eq!(short[0]["what"], "0 of 2 pods");
    let report =
        c.coord("viewer", &["check", "-n", &ns, "--only", "trace", "--stall-after", "2s", "-o", "json"]).ok().json();
    let found: Vec<&Value> =
        report["findings"].as_array().unwrap().iter().filter(|f| f["reason"] == "replicas-short").collect();
    assert_eq!(found.len(), 1, "{report:#}");
    assert_eq!(found[0]["object"], "replicaset.apps/short");
    assert!(found[0]["message"].as_str().unwrap().starts_with("0 of 2 pods for "), "{report:#}");
}

/// Each collection is listed once however many analyses read it: fewer requests than
/// running the commands one by one.
#[test]
fn each_list_is_read_once() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-check-once");
    c.apply(&pinned_deployment("one", &ns, "one", 1));
    let traced = |args: &[&str]| -> (Vec<String>, String) {
        let trace = c.dir.join(format!("{ns}-{}.trace", args.join("_").replace('/', "-")));
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
        cmd.args(args).env("KUBECONFIG", c.kubeconfig("viewer")).env("KUBECTL_COORD_TRACE", &trace);
        let stdout = common::Run::of(cmd).ok().stdout;
        let text = std::fs::read_to_string(&trace).unwrap_or_default();
        (text.lines().map(|l| l.split('\t').nth(2).unwrap().to_string()).collect(), stdout)
    };
    let requests = |args: &[&str]| traced(args).0;
    let check = requests(&["check", "-A"]);
    let first_pages: Vec<&String> = check.iter().filter(|p| !p.contains("continue=")).collect();
    let mut seen = BTreeSet::new();
    for p in &first_pages {
        assert!(seen.insert(p.as_str()), "{p} read twice:\n{check:#?}");
    }
    // Pods, ReplicaSets and Leases feed several analyses each; the pods with no node are
    // one more list, filtered by the server.
    for shared in ["/api/v1/pods", "/apis/apps/v1/replicasets", "/apis/coordination.k8s.io/v1/leases"] {
        let lists = first_pages.iter().filter(|p| p.split('?').next() == Some(shared));
        let unfiltered = lists.filter(|p| !p.contains("fieldSelector")).count();
        assert_eq!(unfiltered, 1, "{shared}: {check:#?}");
    }
    let one_by_one: usize =
        [vec!["leases", "-A"], vec!["owners", "--all", "-A"], vec!["overlaps", "-A"], vec!["fields", "-A"]]
            .iter()
            .map(|args| requests(args).len())
            .sum();
    assert!(check.len() < one_by_one, "check {} requests, the commands {one_by_one}", check.len());

    // In one namespace, the scheduler's lease (which the pod with no node is joined with) is
    // read with the rest of kube-system's leases beside the lists, not asked for after them.
    wait_for("the pod with no node", 90, || {
        !c.kubectl(&["-n", &ns, "get", "pods", "-o", "name"]).ok().stdout.trim().is_empty()
    });
    std::thread::sleep(std::time::Duration::from_secs(2));
    let (scoped, out) = traced(&["check", "-n", &ns, "--stall-after", "1s", "-o", "json", "--only", "trace"]);
    let report: Value = serde_json::from_str(&out).unwrap();
    let messages: Vec<&str> =
        report["findings"].as_array().unwrap().iter().filter_map(|f| f["message"].as_str()).collect();
    assert!(messages.iter().any(|m| m.contains("kube-system/kube-scheduler is fresh")), "{messages:#?}");
    let collection = |p: &String| p.split('?').next().unwrap_or_default().to_string();
    let lease_lists: BTreeSet<String> = scoped.iter().map(collection).filter(|p| p.ends_with("/leases")).collect();
    let expected: BTreeSet<String> = [
        format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"),
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases".to_string(),
    ]
    .into();
    assert_eq!(lease_lists, expected, "{scoped:#?}");
}

#[test]
fn partial_access_is_reported_and_the_readable_part_checked() {
    let c = cluster();
    let ns = c.limited_namespace();
    c.apply(&lease_yaml(&ns, "check-limited-lock", "gone-host_1", 15, Some(-600), 0));
    let report = c.coord("limited", &["check", "-A", "-o", "json"]).ok().json();
    assert_eq!(report["complete"], false);
    let skipped = report["skipped"].as_array().unwrap();
    assert!(skipped.iter().any(|s| s["resource"] == "nodes" && s["reason"] == "forbidden"), "{skipped:#?}");
    assert!(
        skipped.iter().any(|s| s["resource"] == "pods"
            && s["reason"].as_str().unwrap().starts_with("forbidden across all namespaces, read in 1 namespace")),
        "{skipped:#?}"
    );
    assert!(by_mechanism(&report)["leases"].contains(&("expired".to_string(), "lease/check-limited-lock".to_string())));
    let run = c.coord("limited", &["check", "-A"]).ok();
    assert!(run.stderr.contains("warning: not listed, forbidden: "), "{}", run.stderr);
    // The namespace is shared with other tests, which expect it without leases.
    c.kubectl(&["-n", &ns, "delete", "lease", "check-limited-lock"]).ok();
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let c = cluster();
    c.coord("viewer", &["check", "--only", "bogus"]).code(2).one_line_error("invalid value 'bogus'");
    c.coord("viewer", &["check", "--only", "leases", "--skip", "owners"]).code(2).one_line_error("cannot be used with");
    c.coord("viewer", &["check", "--skip", "leases,owners,overlaps,fields,trace"])
        .code(2)
        .one_line_error("--skip leaves no mechanism to check");
    c.coord("viewer", &["check", "--stall-after", "soon"]).code(2).one_line_error("invalid --stall-after \"soon\"");
    c.coord("viewer", &["leases", "-o", "junit"]).code(2).one_line_error("-o junit is for check only");
    c.coord("viewer", &["check", "-n", "no-such-namespace-here"])
        .code(1)
        .one_line_error("namespace \"no-such-namespace-here\" not found");
}

/// A long read shows its progress on stderr when that is a terminal (here a pty from
/// util-linux `script`), erased before the table; in a pipe, never.
#[test]
fn progress_shows_on_a_terminal_only() {
    let c = cluster();
    let bin = env!("CARGO_BIN_EXE_kubectl-coord");
    let kubeconfig = c.kubeconfig("viewer");
    let line = format!("{bin} check -A --color never");
    let mut tty = std::process::Command::new("script");
    tty.args(["-qec", &line, "/dev/null"])
        .env("KUBECONFIG", &kubeconfig)
        .env("KUBECTL_COORD_PROGRESS_AFTER_MS", "0")
        .env("TERM", "xterm");
    let run = common::Run::of(tty);
    assert!(run.code == 0 || run.code == 3, "{}: {}", run.describe, run.stdout);
    assert!(
        run.stdout.contains("reading: ") && run.stdout.contains(" objects"),
        "no progress on a terminal:\n{}",
        run.stdout
    );
    // Erased ("\r" and erase-line) before the output, and not drawn again after it.
    let last_progress = run.stdout.rfind("reading: ").unwrap();
    let erased = last_progress + run.stdout[last_progress..].find("\r\u{1b}[2K").expect("the line is erased");
    let summary = run.stdout.rfind(" finding").expect("the check summary");
    assert!(erased < summary, "{:?}", run.stdout);
    let mut piped = std::process::Command::new(bin);
    piped.args(["check", "-A"]).env("KUBECONFIG", &kubeconfig).env("KUBECTL_COORD_PROGRESS_AFTER_MS", "0");
    let run = common::Run::of(piped);
    assert!(!run.stderr.contains("reading: ") && !run.stdout.contains("reading: "), "{}", run.stderr);
}

/// `kubectl coord dump` to a file, the file to `check --from` with no cluster at all.
fn dump_to(c: &Cluster, args: &[&str], path: &std::path::Path) -> String {
    let plugin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_kubectl-coord")).parent().unwrap().to_path_buf();
    let out = std::process::Command::new(c.bin().join("kubectl"))
        .arg("coord")
        .arg("dump")
        .args(args)
        .env("PATH", format!("{}:{}:/usr/bin:/bin", plugin_dir.display(), c.bin().display()))
        .env("KUBECONFIG", c.kubeconfig("admin"))
        .stdout(std::fs::File::create(path).unwrap())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    stderr
}

fn findings_in(report: &Value, ns: &str) -> BTreeSet<(String, String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["namespace"] == ns)
        .map(|f| {
            let text = |k: &str| f[k].as_str().unwrap().to_string();
            // Ages differ by the seconds between two reads ("renewed 0s ago", "1s ago").
            let message: String = text("message").chars().filter(|c| !c.is_ascii_digit()).collect();
            (text("code"), text("object"), message)
        })
        .collect()
}

/// A dump checked offline (`check --from`) finds what the live check finds, judged as of the
/// dump's capture time; no Secret data or annotation reaches the dump; a dump cut short is
/// checked as far as it goes and never passes as complete; a file that is not a dump is one
/// line and exit 2.
#[test]
fn a_dump_checked_offline_finds_what_the_live_check_finds() {
    let c = cluster();
    let ns = broken_namespace(&c);
    c.apply(&format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: hush\n  namespace: {ns}\n  annotations: {{note: hush-hush-annotation}}\ndata: {{password: c2VjcmV0LXZhbHVl}}\n"
    ));
    let dir = std::env::temp_dir().join(format!("{ns}-dump"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ns.coord.gz");
    let said = dump_to(&c, &["-n", &ns], &file);
    assert!(said.contains("dumped ") && said.contains(" objects in "), "{said}");
    let flags = ["-o", "json", "--stall-after", "2s", "--min-severity", "info"];
    let live = c.coord("admin", &[&["check", "-n", &ns][..], &flags].concat()).ok().json();
    let path = file.to_str().unwrap();
    let from = c.coord_bare(&[&["check", "--from", path][..], &flags].concat()).ok().json();
    common::schema::conforms(&from);
    assert_eq!(from["namespace"], ns.as_str());
    assert_eq!(from["complete"], true, "{from:#}");
    assert_eq!(findings_in(&from, &ns), findings_in(&live, &ns), "live: {live:#}\nfrom the dump: {from:#}");
    assert!(findings_in(&live, &ns).len() >= 6, "every mechanism's problem: {live:#}");
    assert_eq!(from["mechanisms"], live["mechanisms"], "the same objects checked");

    // What a Secret holds never reaches the dump.
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::MultiGzDecoder::new(std::fs::File::open(&file).unwrap()),
        &mut text,
    )
    .unwrap();
    assert!(text.contains("\"hush\""), "the Secret's metadata is there");
    assert!(!text.contains("c2VjcmV0LXZhbHVl") && !text.contains("hush-hush-annotation"), "{text}");

    // All namespaces: the same namespace's findings.
    let everything = dir.join("all.coord.gz");
    dump_to(&c, &["-A"], &everything);
    let all = c.coord_bare(&[&["check", "--from", everything.to_str().unwrap()][..], &flags].concat()).ok().json();
    assert!(all.get("namespace").is_none(), "{all:#}");
    assert_eq!(findings_in(&all, &ns), findings_in(&live, &ns));
    // -n narrows it to what a live -n reads, the same objects counted.
    let narrowed =
        c.coord_bare(&[&["check", "--from", everything.to_str().unwrap(), "-n", &ns][..], &flags].concat()).ok().json();
    assert_eq!(narrowed["namespace"], ns.as_str());
    assert_eq!(narrowed["findings"].as_array().unwrap().len(), findings_in(&narrowed, &ns).len(), "{narrowed:#}");
    assert_eq!(findings_in(&narrowed, &ns), findings_in(&live, &ns));
    // The same objects of the namespace checked. Cluster-scoped objects are counted too, and
    // other tests add some (namespaces) between the live run and the dump: left out.
    let cluster_kinds: BTreeSet<String> = c
        .kubectl(&["api-resources", "--namespaced=false", "--no-headers"])
        .ok()
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(str::to_string))
        .collect();
    let namespaced = |report: &Value| -> Value {
        let mut mechanisms = report["mechanisms"].clone();
        for m in mechanisms.as_array_mut().unwrap() {
            m["checked"].as_object_mut().unwrap().retain(|kind, _| !cluster_kinds.contains(kind));
        }
        mechanisms
    };
    assert!(cluster_kinds.contains("Namespace") && cluster_kinds.contains("Node"), "{cluster_kinds:?}");
    assert_eq!(namespaced(&narrowed), namespaced(&live), "the same objects checked");
    // A dump of one namespace holds no other.
    c.coord_bare(&["check", "--from", path, "-n", "elsewhere"]).code(2).one_line_error("holds namespace");

    // Cut short: checked as far as it goes, incomplete, said on stderr.
    let bytes = std::fs::read(&everything).unwrap();
    let cut = dir.join("cut.coord.gz");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let run = c.coord_bare(&["check", "--from", cut.to_str().unwrap(), "-o", "json", "--only", "owners"]).ok();
    assert!(run.stderr.contains("the dump is incomplete"), "{}", run.stderr);
    assert_eq!(run.json()["complete"], false);

    // Not a dump: one line, exit 2.
    let foreign = dir.join("notes.txt");
    std::fs::write(&foreign, "hello\n").unwrap();
    c.coord_bare(&["check", "--from", foreign.to_str().unwrap()]).code(2).one_line_error("not a kubectl coord dump");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// (code, object) of each finding in `ns`.
/// The mechanisms a report lists as not covered, in its order.
fn not_covered(report: &Value) -> Vec<&str> {
    report["notCovered"].as_array().unwrap().iter().map(|n| n["mechanism"].as_str().unwrap()).collect()
}

fn codes_in(report: &Value, ns: &str) -> BTreeSet<(String, String)> {
    findings_in(report, ns).into_iter().map(|(code, object, _)| (code, object)).collect()
}

/// The real `kubectl cluster-info dump`, as a directory (with and without
/// --show-managed-fields) and as its standard output: `check --from` finds the live findings
/// less those whose input the format lacks (Leases, PodDisruptionBudgets, ConfigMaps; fields
/// without managedFields), and lists those mechanisms as not covered: never complete.
#[test]
fn a_cluster_info_dump_gives_the_live_findings_its_format_can_feed() {
    let c = cluster();
    let ns = broken_namespace(&c);
    let flags = ["-o", "json", "--stall-after", "2s", "--min-severity", "info"];
    let live = c.coord("admin", &[&["check", "-n", &ns][..], &flags].concat()).ok().json();
    let dumped_kinds = ["deployment.apps/", "replicaset.apps/", "daemonset.apps/", "pod/", "service/"];
    let expected = |fields: bool| -> BTreeSet<(String, String)> {
        codes_in(&live, &ns)
            .into_iter()
            .filter(|(code, object)| {
                dumped_kinds.iter().any(|k| object.starts_with(k))
                    && !code.starts_with("CO1")
                    && code != "CO302"
                    && (fields || !code.starts_with("CO4"))
            })
            .collect()
    };
    let dir = std::env::temp_dir().join(format!("{ns}-cluster-info"));
    for (managed, name) in [(false, "plain"), (true, "managed")] {
        let out = dir.join(name);
        let mut args = vec!["cluster-info", "dump", "--namespaces", &ns, "--output-directory", out.to_str().unwrap()];
        if managed {
            args.push("--show-managed-fields");
        }
        c.kubectl(&args).ok();
        let from = c.coord_bare(&[&["check", "--from", out.to_str().unwrap()][..], &flags].concat()).ok().json();
        common::schema::conforms(&from);
        assert_eq!(from["namespace"], ns.as_str());
        assert_eq!(codes_in(&from, &ns), expected(managed), "{name}: live {live:#}\nfrom the dump {from:#}");
        assert!(expected(managed).len() >= 3, "overlaps and stalls at least: {live:#}");
        assert_eq!(from["complete"], false);
        let uncovered = not_covered(&from);
        let want: &[&str] =
            if managed { &["leases", "owners", "overlaps"] } else { &["leases", "owners", "overlaps", "fields"] };
        assert_eq!(uncovered, want, "{name}");
    }
    // Its standard output, logs and all, as a file.
    let stream = dir.join("stream.txt");
    let out = c.kubectl(&["cluster-info", "dump", "--namespaces", &ns, "--show-managed-fields"]).ok();
    std::fs::write(&stream, &out.stdout).unwrap();
    let from = c.coord_bare(&[&["check", "--from", stream.to_str().unwrap()][..], &flags].concat()).ok().json();
    assert_eq!(codes_in(&from, &ns), expected(true), "stream: {from:#}");
    // A List that is not JSON is skipped and named; the rest is read.
    std::fs::write(dir.join("plain").join(&ns).join("services.json"), "{ not json").unwrap();
    let run = c.coord_bare(&["check", "--from", dir.join("plain").to_str().unwrap(), "-o", "json"]).ok();
    assert!(run.stderr.contains("services.json: not a List"), "{}", run.stderr);
    assert!(!codes_in(&run.json(), &ns).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A real troubleshoot.sh support bundle (replicatedhq/troubleshoot's `support-bundle`, its
/// clusterResources collector over the namespace and kube-system), as its .tar.gz and
/// unpacked: `check --from` finds the live findings (Leases, budgets, ConfigMaps and
/// managedFields are all in a bundle), and lists owners and overlaps as not covered, for the
/// kinds a bundle never holds (ReplicationControllers, Secrets...): never complete.
#[test]
fn a_support_bundle_gives_the_live_findings() {
    let c = cluster();
    let ns = broken_namespace(&c);
    let flags = ["-o", "json", "--stall-after", "2s", "--min-severity", "info"];
    let live = c.coord("admin", &[&["check", "-n", &ns][..], &flags].concat()).ok().json();
    let expected = codes_in(&live, &ns);
    let mechanisms: BTreeSet<&str> = expected.iter().map(|(code, _)| &code[..3]).collect();
    assert_eq!(mechanisms, BTreeSet::from(["CO1", "CO2", "CO3", "CO4", "CO5"]), "every mechanism: {live:#}");
    let dir = std::env::temp_dir().join(format!("{ns}-support-bundle"));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("spec.yaml");
    std::fs::write(
        &spec,
        format!(
            "apiVersion: troubleshoot.sh/v1beta2\nkind: SupportBundle\nmetadata: {{name: coord}}\nspec:\n  collectors:\n  - clusterResources:\n      namespaces: [{ns}, kube-system]\n"
        ),
    )
    .unwrap();
    let archive = dir.join("bundle.tar.gz");
    let mut cmd = std::process::Command::new(c.bin().join("support-bundle"));
    cmd.arg(&spec)
        .args(["--interactive=false", "--output"])
        .arg(&archive)
        .current_dir(&dir)
        .env("KUBECONFIG", c.kubeconfig("admin"));
    common::Run::of(cmd).ok();
    let unpacked = dir.join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    let tar = std::process::Command::new("tar").arg("-C").arg(&unpacked).arg("-xzf").arg(&archive).status().unwrap();
    assert!(tar.success());
    for path in [&archive, &unpacked] {
        let from = c.coord_bare(&[&["check", "--from", path.to_str().unwrap()][..], &flags].concat()).ok().json();
        common::schema::conforms(&from);
        assert_eq!(codes_in(&from, &ns), expected, "{}: live {live:#}\nfrom the bundle {from:#}", path.display());
        assert_eq!(from["complete"], false);
        assert_eq!(from["skipped"], serde_json::json!([]), "every part of the bundle is read: {from:#}");
        let uncovered = not_covered(&from);
        assert_eq!(uncovered, ["owners", "overlaps"], "{}", path.display());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A 1 GB dump is read as a stream: `kubectl cluster-info dump`'s standard output is mostly
/// pod logs, and 1 GiB of them between two Lists, piped to `check --from -`, is read line
/// by line: the run finds the Lists' objects and its peak RSS stays a small fraction of the
/// input (the kernel's count for the child, from wait4).
#[cfg(target_os = "linux")]
#[test]
fn a_1_gib_dump_is_streamed_not_loaded() {
    use std::io::Write;
    // Reaped by libc::wait4 below, for its rusage.
    #[allow(clippy::zombie_processes)]
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-coord"))
        .args(["check", "--from", "-", "-o", "json", "--only", "overlaps"])
        .env_remove("KUBECONFIG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let list = |kind: &str, items: &str| format!("{{\n    \"kind\": \"{kind}\",\n    \"items\": [{items}]\n}}\n");
        let rs = |name: &str| {
            format!(
                r#"{{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{{"name":"{name}","namespace":"a","uid":"{name}-uid"}},"spec":{{"selector":{{"matchLabels":{{"app":"shop"}}}},"template":{{"metadata":{{"labels":{{"app":"shop"}}}}}}}}}}"#
            )
        };
        stdin.write_all(list("NodeList", "").as_bytes()).unwrap();
        stdin.write_all(list("ReplicaSetList", &format!("{},{}", rs("one"), rs("two"))).as_bytes()).unwrap();
        stdin.write_all(b"==== START logs for container c of pod a/p ====\n").unwrap();
        let block = "I1208 02:00:00.000000       1 controller.go:42] a log line that goes on for a while\n".repeat(800);
        let mut written = 0usize;
        while written < 1 << 30 {
            stdin.write_all(block.as_bytes()).unwrap();
            written += block.len();
        }
        stdin.write_all(b"==== END logs for container c of pod a/p ====\n").unwrap();
        stdin.write_all(list("PodList", "").as_bytes()).unwrap();
        written
    });
    let pid = child.id() as libc::pid_t;
    // Read stdout and stderr while waiting, so that neither pipe fills.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut out, &mut text).unwrap();
        text
    });
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut err, &mut text).unwrap();
        text
    });
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, whose pid we hold and have not waited for.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid);
    let written = writer.join().unwrap();
    let (stdout, stderr) = (reader.join().unwrap(), errors.join().unwrap());
    assert!(written >= 1 << 30);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let found: Vec<&str> = report["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert_eq!(found, ["CO301"], "the two ReplicaSets either side of the logs: {report:#}");
    let peak_mb = usage.ru_maxrss / 1024;
    assert!(peak_mb < 100, "peak RSS {peak_mb} MB for a 1 GiB stream");
    eprintln!("1 GiB cluster-info stream: peak RSS {peak_mb} MB");
}
