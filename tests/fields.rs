//! `kubectl coord fields` against ownership written by the real server, with the
//! server itself as the oracle: a server-side dry-run apply by another manager that
//! changes only a field must conflict naming the manager the command attributes it
//! to, and a field the command says nobody owns must not conflict.

mod common;

use std::time::{Duration, Instant};

use common::{Cluster, cluster};

fn setup(c: &Cluster) -> String {
    let ns = c.fresh_namespace("coord-fields-cmd");
    let manifest = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: {ns}}}\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers:\n      - name: web\n        image: registry.k8s.io/pause:3.10\n"
    );
    let path = c.dir.join(format!("{ns}.yaml"));
    std::fs::write(&path, manifest).unwrap();
    c.kubectl(&["apply", "--server-side", "--field-manager=gitops", "-f", path.to_str().unwrap()]).ok();
    // The HPA-style writer: the scale subresource takes spec.replicas.
    c.kubectl(&["-n", &ns, "scale", "deployment", "web", "--replicas=3"]).ok();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !c
        .kubectl(&["-n", &ns, "get", "deploy", "web", "-o", "jsonpath={.metadata.managedFields[*].manager}"])
        .ok()
        .stdout
        .contains("kube-controller-manager")
    {
        assert!(Instant::now() < deadline, "the Deployment controller never wrote status");
        std::thread::sleep(Duration::from_millis(300));
    }
    ns
}

/// Server-side dry-run apply by `probe` of a Deployment that sets only `spec_yaml`.
fn probe_apply(c: &Cluster, ns: &str, spec_yaml: &str) -> common::Run {
    let manifest =
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: {ns}}}\nspec:\n{spec_yaml}");
    let path = c.dir.join(format!("{ns}-probe.yaml"));
    std::fs::write(&path, manifest).unwrap();
    c.kubectl(&["apply", "--server-side", "--dry-run=server", "--field-manager=probe", "-f", path.to_str().unwrap()])
}

#[test]
fn ownership_agrees_with_the_servers_conflicts() {
    let c = cluster();
    let ns = setup(&c);
    let report = c.coord("viewer", &["fields", "deploy/web", "-n", &ns, "-o", "json"]).ok().json();
    assert_eq!(report["kind"], "FieldReport");
    let obj = &report["objects"][0];
    let owners = |path: &str| -> Vec<String> {
        obj["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .map(|f| {
                f["owners"].as_array().unwrap().iter().map(|o| o["manager"].as_str().unwrap().to_string()).collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(owners(".spec.replicas"), vec!["kubectl"]);
    assert_eq!(owners(".spec.template.spec.containers[name=web].image"), vec!["gitops"]);
    assert!(owners(".spec.minReadySeconds").is_empty());
    let value =
        obj["fields"].as_array().unwrap().iter().find(|f| f["path"] == ".spec.replicas").unwrap()["value"].clone();
    assert_eq!(value, 3);

    // The server's own verdicts.
    let replicas = probe_apply(&c, &ns, "  replicas: 5\n");
    assert_ne!(replicas.code, 0);
    assert!(
        replicas.stderr.contains("conflict with \"kubectl\"") && replicas.stderr.contains(".spec.replicas"),
        "{}",
        replicas.stderr
    );
    let image = probe_apply(
        &c,
        &ns,
        "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - {name: web, image: registry.k8s.io/pause:3.9}\n",
    );
    assert_ne!(image.code, 0);
    assert!(image.stderr.contains("conflict with \"gitops\""), "{}", image.stderr);
    probe_apply(&c, &ns, "  minReadySeconds: 7\n").ok();

    // The classic fight is flagged: replicas owned by an Update manager inside gitops's applied spec.
    let contests = obj["contests"].as_array().unwrap();
    assert!(
        contests.iter().any(|c| c["path"] == ".spec.replicas" && c["kind"] == "update-inside-apply"),
        "{contests:#?}"
    );
    c.coord("viewer", &["fields", "deploy/web", "-n", &ns, "--exit-code"]).code(3);
    c.coord("viewer", &["fields", "deploy/web", "-n", &ns, "--exit-code", "--path", ".spec.template"]).code(0);
}

#[test]
fn views_filters_and_bad_input() {
    let c = cluster();
    let ns = setup(&c);
    let by = c.coord("viewer", &["fields", "deployments.apps", "web", "-n", &ns, "--by-manager"]).ok();
    let gitops = by.stdout.lines().find(|l| l.starts_with("gitops ")).unwrap_or_else(|| panic!("{}", by.stdout));
    assert!(gitops.contains("Apply") && gitops.contains("<main>") && gitops.contains("spec"), "{gitops}");
    let status = by.stdout.lines().find(|l| l.starts_with("kube-controller-manager ")).unwrap();
    assert!(status.contains("status"), "{status}");
    let wide = c.coord("viewer", &["fields", "deploy/web", "-n", &ns, "-o", "wide", "--manager", "gitops"]).ok();
    assert!(
        wide.stdout.lines().skip(1).filter(|l| l.starts_with('.')).all(|l| l.contains(" gitops ")),
        "{}",
        wide.stdout
    );
    assert!(wide.stdout.contains("\"registry.k8s.io/pause:3.10\""), "{}", wide.stdout);
    for (args, code, needle) in [
        (vec!["fields", "deploy/nope"], 1, "deployments \"nope\" not found"),
        (vec!["fields", "gadget/x"], 2, "does not serve a resource type \"gadget\""),
        (vec!["fields", "deploy/"], 2, "the name is empty"),
        (vec!["fields", "/x"], 2, "the resource type is empty"),
        (vec!["fields", "a/b/c"], 2, "one '/'"),
        (vec!["fields", "deploy/my app"], 2, "not a valid object name"),
    ] {
        let mut full = args.clone();
        full.extend(["-n", ns.as_str()]);
        c.coord("viewer", &full).code(code).one_line_error(needle);
    }
}

#[test]
fn namespace_census_counts_managers_and_lists_contested_objects() {
    let c = cluster();
    let ns = setup(&c);
    let report = c.coord("viewer", &["fields", "-n", &ns, "-o", "json"]).ok().json();
    assert_eq!(report["kind"], "FieldCensus");
    // The Deployment and the ReplicaSet its controller made.
    assert_eq!(report["objects"], 2, "{report:#}");
    let managers = report["managers"].as_array().unwrap();
    let gitops = managers.iter().find(|m| m["manager"] == "gitops").unwrap();
    assert_eq!(gitops["objects"], 1);
    let kcm = managers.iter().find(|m| m["manager"] == "kube-controller-manager").unwrap();
    assert_eq!(kcm["objects"], 2, "it wrote the Deployment's status and made the ReplicaSet");
    let contested = report["contested"].as_array().unwrap();
    assert!(
        contested
            .iter()
            .any(|o| o["name"] == "web"
                && o["contests"].as_array().unwrap().iter().any(|k| k["path"] == ".spec.replicas")),
        "{contested:#?}"
    );
    let table = c.coord("viewer", &["fields", "-n", &ns]).ok();
    assert!(
        table
            .stdout
            .contains(&format!("{ns}/deployment/web: .spec.replicas update-inside-apply: kubectl (scale), gitops")),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("2 objects,"), "{}", table.stdout);
    c.coord("viewer", &["fields", "-n", &ns, "--exit-code"]).code(3);
    // --kinds adds types: the namespace's kube-root-ca.crt ConfigMap.
    let more = c.coord("viewer", &["fields", "-n", &ns, "--kinds", "configmaps", "-o", "json"]).ok().json();
    assert_eq!(more["objects"], 3, "{more:#}");
    c.coord("viewer", &["fields", "-n", &ns, "--kinds", "gadgets"]).code(2).one_line_error("--kinds");
    c.coord("viewer", &["fields", "-n", &ns, "--by-manager"]).code(2).one_line_error("need an object");
    let limited = c.coord("limited", &["fields", "-A"]).ok();
    let lns = c.limited_namespace();
    assert!(
        limited.stderr.contains(&format!(
            "deployments: listing across all namespaces is forbidden; read namespace by namespace: {lns}"
        )),
        "{}",
        limited.stderr
    );
}

#[test]
fn watch_reports_the_replicas_fight_as_it_happens() {
    use std::io::{BufRead, BufReader};
    let c = cluster();
    let ns = setup(&c);
    let manifest = c.dir.join(format!("{ns}.yaml"));
    let mut watcher = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-coord"))
        .args(["fields", "deploy/web", "-n", &ns, "--watch", "--watch-timeout", "20s", "-o", "json", "--exit-code"])
        .env("KUBECONFIG", c.kubeconfig("viewer"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    // A GitOps tool forcing its replicas back, and someone scaling again: three rounds.
    for replicas in [4, 5, 6] {
        c.kubectl(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=gitops",
            "-f",
            manifest.to_str().unwrap(),
        ])
        .ok();
        std::thread::sleep(Duration::from_millis(700));
        c.kubectl(&["-n", &ns, "scale", "deployment", "web", &format!("--replicas={replicas}")]).ok();
        std::thread::sleep(Duration::from_millis(700));
    }
    let stdout = BufReader::new(watcher.stdout.take().unwrap());
    let lines: Vec<serde_json::Value> =
        stdout.lines().map(|l| serde_json::from_str(&l.unwrap()).expect("one JSON object per line")).collect();
    let status = watcher.wait().unwrap();
    let replicas: Vec<&serde_json::Value> = lines.iter().filter(|l| l["path"] == ".spec.replicas").collect();
    assert!(replicas.len() >= 5, "six takeovers were made, at most the first may precede the watch: {lines:?}");
    for l in &replicas {
        let (from, to) = (l["from"][0].as_str().unwrap(), l["to"][0].as_str().unwrap());
        assert!((from, to) == ("gitops", "kubectl (scale)") || (from, to) == ("kubectl (scale)", "gitops"), "{l}");
    }
    assert!(replicas.iter().filter(|l| l["fight"] == true).count() >= 3, "{replicas:?}");
    let summary = lines.last().unwrap();
    let fight = summary["fights"].as_array().unwrap().iter().find(|f| f["path"] == ".spec.replicas").unwrap();
    assert_eq!(fight["managers"], serde_json::json!(["gitops", "kubectl (scale)"]));
    assert!(fight["changes"].as_u64().unwrap() >= 5);
    assert_eq!(status.code(), Some(3), "--exit-code: a fight was seen");
    // The image was never contested: no line for it.
    assert!(!lines.iter().any(|l| l["path"].as_str().is_some_and(|p| p.contains("image"))));
}

#[test]
fn secrets_and_configmaps_show_ownership_but_never_their_data() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-fields-secret");
    let manifest = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings, namespace: {ns}}}\ndata: {{password: hunter2-in-a-configmap}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {{name: creds, namespace: {ns}}}\ndata: {{token: czNjcjN0LXQwa2Vu}}\n"
    );
    let path = c.dir.join(format!("{ns}-data.yaml"));
    std::fs::write(&path, manifest).unwrap();
    c.kubectl(&["apply", "--server-side", "--field-manager=gitops", "-f", path.to_str().unwrap()]).ok();
    for (object, field) in [("cm/settings", ".data.password"), ("secret/creds", ".data.token")] {
        let run = c.coord("viewer", &["fields", object, "-n", &ns, "-o", "json"]).ok();
        let report = run.json();
        let row = report["objects"][0]["fields"].as_array().unwrap().iter().find(|f| f["path"] == field).cloned();
        let row = row.unwrap_or_else(|| panic!("{object}: no {field} in {}", run.stdout));
        assert_eq!(row["owners"][0]["manager"], "gitops");
        assert!(row.get("value").is_none(), "{object}: the value was read: {row}");
        let wide = c.coord("viewer", &["fields", object, "-n", &ns, "-o", "wide"]).ok().stdout;
        // The blame view of an object read metadata-only shows its metadata and says why no more.
        let blame = c.coord("viewer", &["fields", object, "-n", &ns, "-o", "blame"]).ok();
        assert!(blame.stdout.contains("  name: ") && blame.stderr.contains("read metadata-only"), "{}", blame.stderr);
        // czNjcjN0LXQwa2Vu is base64 for s3cr3t-t0ken.
        for secret in ["hunter2", "s3cr3t", "czNjcjN0"] {
            for shown in [&run.stdout, &wide, &blame.stdout] {
                assert!(!shown.contains(secret), "{object} leaked its data");
            }
        }
    }
}

/// Issue 17: an election library acquires with a server-side apply and renews with plain
/// updates under one manager name; a GitOps tool may apply and then patch. One writer
/// with two entries is not a fight: no contest, exit 0; a second writer still is, exit 3.
#[test]
fn one_writer_that_applies_and_updates_does_not_fight_itself() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-fields-self");
    let manifest = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: {ns}}}\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers:\n      - name: web\n        image: registry.k8s.io/pause:3.10\n"
    );
    let path = c.dir.join(format!("{ns}.yaml"));
    std::fs::write(&path, manifest).unwrap();
    c.kubectl(&["apply", "--server-side", "--field-manager=gitops", "-f", path.to_str().unwrap()]).ok();
    let patch = |manager: &str, replicas: u32| {
        let body = format!(r#"{{"spec":{{"replicas":{replicas}}}}}"#);
        c.kubectl(&["-n", &ns, "patch", "deploy", "web", "--type=merge", "-p", &body, "--field-manager", manager]).ok();
    };
    patch("gitops", 3);
    let run = c.coord("viewer", &["fields", "deploy/web", "-n", &ns, "--exit-code", "-o", "json"]).code(0);
    let contests = run.json()["objects"][0]["contests"].as_array().unwrap().clone();
    assert_eq!(contests.len(), 1, "only the informational note: {contests:#?}");
    assert_eq!(contests[0]["kind"], "same-manager-apply-and-update");
    assert_eq!(contests[0]["managers"], serde_json::json!(["gitops (Apply + Update)"]));
    let text = c.coord("viewer", &["fields", "deploy/web", "-n", &ns]).ok().stdout;
    assert!(!text.contains("gitops, gitops"), "a line never names the same writer twice: {text}");

    // A second writer taking the same field is still the fight.
    patch("autoscaler", 4);
    let run = c.coord("viewer", &["fields", "deploy/web", "-n", &ns, "--exit-code", "-o", "json"]).code(3);
    let contests = run.json()["objects"][0]["contests"].as_array().unwrap().clone();
    let fight = contests.iter().find(|c| c["path"] == ".spec.replicas").unwrap_or_else(|| panic!("{contests:#?}"));
    assert_eq!(fight["kind"], "update-inside-apply");
    assert_eq!(fight["managers"], serde_json::json!(["autoscaler", "gitops"]));

    // A lock held the way such a library holds it: acquired by apply, renewed by update.
    let lease = c.dir.join(format!("{ns}-lease.yaml"));
    std::fs::write(
        &lease,
        format!(
            "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {{name: lock, namespace: {ns}}}\nspec:\n  holderIdentity: worker-1\n  leaseDurationSeconds: 15\n  acquireTime: \"{}\"\n",
            common::micro_time(0)
        ),
    )
    .unwrap();
    c.kubectl(&["apply", "--server-side", "--field-manager=elector", "-f", lease.to_str().unwrap()]).ok();
    for _ in 0..2 {
        let body = format!(r#"{{"spec":{{"renewTime":"{}","leaseTransitions":1}}}}"#, common::micro_time(0));
        c.kubectl(&["-n", &ns, "patch", "lease", "lock", "--type=merge", "-p", &body, "--field-manager=elector"]).ok();
    }
    let census = c.coord("viewer", &["fields", "-n", &ns, "--kinds", "leases", "--exit-code", "-o", "json"]).code(3);
    let contested: Vec<String> = census.json()["contested"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| format!("{}/{}", o["kind"].as_str().unwrap(), o["name"].as_str().unwrap()))
        .collect();
    assert_eq!(contested, vec!["Deployment/web".to_string()], "the lock is uncontested; the Deployment is not");
    c.coord("viewer", &["fields", "lease/lock", "-n", &ns, "--exit-code"]).code(0);
}

/// `-o blame` against ownership the real server wrote: every line names exactly the
/// managers that own that field (several when they share it), through which
/// subresource; a defaulted field has an empty gutter, and the server agrees that
/// nobody owns it (a dry-run apply changing it does not conflict).
#[test]
fn blame_names_each_lines_owners_as_the_server_records_them() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-fields-blame");
    let deploy = |body: &str| {
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: {ns}}}\nspec:\n{body}")
    };
    let container = "      containers:\n      - name: web\n        image: registry.k8s.io/pause:3.10\n";
    let gitops = deploy(&format!(
        "  replicas: 2\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n{container}        ports:\n        - {{containerPort: 80, protocol: TCP}}\n        - {{containerPort: 80, protocol: UDP}}\n"
    ));
    // A second applier declaring the same container image: the server records both as owners.
    let platform = deploy(&format!("  template:\n    spec:\n{container}"));
    for (manager, manifest) in [("gitops", &gitops), ("platform", &platform)] {
        let path = c.dir.join(format!("{ns}-{manager}.yaml"));
        std::fs::write(&path, manifest).unwrap();
        c.kubectl(&["apply", "--server-side", &format!("--field-manager={manager}"), "-f", path.to_str().unwrap()])
            .ok();
    }
    c.kubectl(&["-n", &ns, "scale", "deployment", "web", "--replicas=3"]).ok();
    c.kubectl(&["-n", &ns, "rollout", "status", "deployment/web", "--timeout=60s"]).ok();
    let blame = |extra: &[&str]| {
        let mut args = vec!["fields", "deploy/web", "-n", &ns, "-o", "blame", "--time", "none"];
        args.extend(extra);
        c.kubectl_plugin("viewer", &args).ok().stdout
    };
    let text = blame(&[]);
    // A line's owners, in any order (the gutter follows managedFields order). The YAML
    // starts where the first line, `apiVersion`, does.
    let column = text.find("apiVersion:").expect("the object starts with apiVersion");
    let gutter = |yaml: &str| -> std::collections::BTreeSet<String> {
        let line = text
            .lines()
            .find(|l| l.get(column..) == Some(yaml))
            .unwrap_or_else(|| panic!("no line {yaml:?} in\n{text}"));
        line[..column].split(", ").map(str::trim).filter(|o| !o.is_empty()).map(str::to_string).collect()
    };
    let set = |owners: &[&str]| owners.iter().map(|o| o.to_string()).collect::<std::collections::BTreeSet<_>>();
    let replicas: Vec<&str> = text.lines().filter(|l| l.ends_with("  replicas: 3")).collect();
    assert!(replicas.iter().any(|l| l.starts_with("kubectl Update/scale ")), "{text}");
    // The container's first line carries the item's owners besides its field's.
    assert_eq!(gutter("      - image: registry.k8s.io/pause:3.10"), set(&["gitops Apply", "platform Apply"]), "{text}");
    assert_eq!(gutter("        name: web"), set(&["gitops Apply", "platform Apply"]), "{text}");
    // Keyed by containerPort and protocol: two items, one key field each on their first line.
    let port_lines: Vec<&str> = text.lines().filter(|l| l.ends_with("- containerPort: 80")).collect();
    assert_eq!(port_lines.len(), 2, "{text}");
    assert!(port_lines.iter().all(|l| l.trim_start().starts_with("gitops Apply ")), "{port_lines:?}");
    assert_eq!(gutter("        imagePullPolicy: IfNotPresent"), set(&[]), "a defaulted field is nobody's:\n{text}");
    // The selector is atomic (FieldsV1 names it as a leaf): its owner owns every line of it.
    assert_eq!(gutter("      app: web"), set(&["gitops Apply"]), "{text}");
    assert_eq!(gutter("  observedGeneration: 2"), set(&["kube-controller-manager Update/status"]), "{text}");
    assert!(!text.contains("managedFields"), "{text}");
    let probe = c.dir.join(format!("{ns}-probe.yaml"));
    std::fs::write(&probe, deploy(&format!("  template:\n    spec:\n{container}        imagePullPolicy: Never\n")))
        .unwrap();
    c.kubectl(&["apply", "--server-side", "--dry-run=server", "--field-manager=probe", "-f", probe.to_str().unwrap()])
        .ok();
    std::fs::write(
        &probe,
        deploy(
            "  template:\n    spec:\n      containers:\n      - name: web\n        image: registry.k8s.io/pause:3.9\n",
        ),
    )
    .unwrap();
    let conflict = c.kubectl(&[
        "apply",
        "--server-side",
        "--dry-run=server",
        "--field-manager=probe",
        "-f",
        probe.to_str().unwrap(),
    ]);
    assert!(
        conflict.code != 0 && conflict.stderr.contains("gitops") && conflict.stderr.contains("platform"),
        "{}",
        conflict.stderr
    );

    // Filters empty the gutter, never the object.
    let by_manager = blame(&["--manager", "kubectl"]);
    assert_eq!(by_manager.lines().count(), text.lines().count());
    let owned: Vec<&str> = by_manager.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(owned.len(), 1, "{by_manager}");
    assert!(owned[0].starts_with("kubectl Update/scale") && owned[0].ends_with("replicas: 3"));
    let by_path = blame(&["--path", ".status"]);
    let owned: Vec<&str> = by_path.lines().filter(|l| !l.starts_with(' ')).collect();
    assert!(
        !owned.is_empty() && owned.iter().all(|l| l.starts_with("kube-controller-manager Update/status")),
        "{by_path}"
    );
    let relative = c.coord("viewer", &["fields", "deploy/web", "-n", &ns, "-o", "blame"]).ok().stdout;
    // An age on the server's clock (the server leaves `time` out of some entries: <unknown> there).
    let aged =
        |l: &str| l.strip_prefix("gitops Apply ").is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    assert!(relative.lines().any(aged), "{relative}");
    // The blame view gates CI as the table does: kubectl's scale inside gitops's applied spec.
    c.coord("viewer", &["fields", "deploy/web", "-n", &ns, "-o", "blame", "--exit-code"]).code(3);
    let coloured =
        c.coord("viewer", &["fields", "deploy/web", "-n", &ns, "-o", "blame", "--color", "always"]).ok().stdout;
    assert!(coloured.contains("\u{1b}["), "{coloured}");

    // The same object saved with its managedFields and read back offline gives the same view.
    let saved = c.dir.join(format!("{ns}-saved.yaml"));
    let mut same = false;
    for _ in 0..5 {
        let live = blame(&[]);
        let yaml = c.kubectl(&["-n", &ns, "get", "deploy/web", "-o", "yaml", "--show-managed-fields"]).ok().stdout;
        std::fs::write(&saved, &yaml).unwrap();
        let offline = c.coord_bare(&["fields", "-f", saved.to_str().unwrap(), "-o", "blame", "--time", "none"]).ok();
        if offline.stdout == live {
            same = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(same, "-f gave a different view than the live object");
    let mut piped = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
    piped
        .args(["fields", "-f", "-", "-o", "json"])
        .env_remove("KUBECONFIG")
        .stdin(std::fs::File::open(&saved).unwrap());
    let report = common::Run::of(piped).ok().json();
    common::schema::conforms(&report);
    assert_eq!(report["objects"][0]["name"], "web");
    assert!(report["objects"][0]["fields"].as_array().unwrap().iter().any(|f| f["path"] == ".spec.replicas"));
    assert!(report.get("serverTime").is_none(), "a file has no server clock: {report}");
    // Without managedFields (kubectl's default) the view is there, with a warning why it is empty.
    let bare = c.kubectl(&["-n", &ns, "get", "deploy/web", "-o", "yaml"]).ok().stdout;
    std::fs::write(&saved, bare).unwrap();
    let run = c.coord_bare(&["fields", "-f", saved.to_str().unwrap(), "-o", "blame"]).ok();
    assert!(
        run.stdout.starts_with("apiVersion: apps/v1\n") && run.stderr.contains("--show-managed-fields"),
        "{}",
        run.stderr
    );

    for (args, needle) in [
        (vec!["leases", "-o", "blame"], "-o blame is for fields only"),
        (vec!["fields", "-o", "blame"], "-o blame needs an object"),
        (vec!["fields", "deploy/web", "--time", "full"], "--time is for -o blame"),
        (vec!["fields", "deploy/web", "-o", "blame", "--by-manager"], "--by-manager is for the table"),
        (vec!["fields", "-f", "/nonexistent/x.yaml"], "cannot read /nonexistent/x.yaml"),
        (vec!["fields", "deploy/web", "-f", "x.yaml"], "cannot be used with"),
        (vec!["fields", "-f", "x.yaml", "--all-contexts"], "--contexts and --all-contexts work with"),
    ] {
        let mut full = args.clone();
        full.extend(["-n", ns.as_str()]);
        c.coord("viewer", &full).code(2).one_line_error(needle);
    }
}
