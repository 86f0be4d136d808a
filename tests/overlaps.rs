//! `kubectl coord overlaps` against real objects and the real Deployment,
//! ReplicaSet and StatefulSet controllers.

mod common;

use std::time::{Duration, Instant};

use common::{Cluster, cluster};
use serde_json::Value;

fn deployment(ns: &str, name: &str, selector: &str, labels: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  replicas: {replicas}\n  selector: {selector}\n  template:\n    metadata: {{labels: {labels}}}\n    spec: {{containers: [{{name: app, image: registry.k8s.io/pause:3.10}}]}}\n"
    )
}

fn replicaset(ns: &str, name: &str, selector: &str, labels: &str, replicas: u32) -> String {
    deployment(ns, name, selector, labels, replicas).replace("kind: Deployment", "kind: ReplicaSet")
}

fn pods_with(c: &Cluster, ns: &str, selector: &str, n: usize, owner_kind: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let out = c.kubectl(&["-n", ns, "get", "pods", "-l", selector, "-o", "json"]).ok();
        let items = out.json()["items"].as_array().unwrap().clone();
        let owned = items
            .iter()
            .filter(|p| {
                p["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|r| r["kind"] == owner_kind && r["controller"] == true))
            })
            .count();
        if items.len() >= n && owned >= n {
            return items;
        }
        assert!(
            Instant::now() < deadline,
            "waiting for {n} pods {selector} owned by a {owner_kind}: {} / {owned}",
            items.len()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn find<'a>(report: &'a Value, a: &str, b: &str) -> Option<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| (f["a"]["name"] == a && f["b"]["name"] == b) || (f["a"]["name"] == b && f["b"]["name"] == a))
}

#[test]
fn deployments_overlapping_through_match_expressions_with_live_pods() {
    let c = cluster();
    let ns = &c.fresh_namespace("coord-overlap-deploy");
    c.apply(&deployment(ns, "shop-a", "{matchLabels: {app: shop, track: a}}", "{app: shop, track: a}", 2));
    c.apply(&deployment(
        ns,
        "shop-b",
        "{matchExpressions: [{key: app, operator: In, values: [shop]}, {key: track, operator: NotIn, values: [b]}]}",
        "{app: shop, track: c}",
        0,
    ));
    // A disjoint pair, separated only by a NotIn.
    c.apply(&deployment(
        ns,
        "db-main",
        "{matchLabels: {tier: db}, matchExpressions: [{key: env, operator: NotIn, values: [prod]}]}",
        "{tier: db, env: dev}",
        0,
    ));
    c.apply(&deployment(ns, "db-prod", "{matchLabels: {tier: db, env: prod}}", "{tier: db, env: prod}", 0));
    pods_with(&c, ns, "app=shop,track=a", 2, "ReplicaSet");

    let report = c.coord("viewer", &["overlaps", "-n", ns, "-o", "json", "--explain"]).ok().json();
    assert_eq!(report["kind"], "OverlapReport");
    let f = find(&report, "shop-a", "shop-b").unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(f["severity"], "error");
    assert_eq!(f["a"]["kind"], "Deployment");
    let witness = f["witness"].as_object().unwrap();
    assert_eq!(witness["app"], "shop");
    assert_ne!(witness["track"], "b");
    assert_eq!(f["templateHazards"].as_array().unwrap().len(), 1, "{f:#}");
    let shared = f["sharedPods"].as_array().unwrap();
    assert_eq!(shared.len(), 2, "{f:#}");
    let owner_side = if f["a"]["name"] == "shop-a" { "a" } else { "b" };
    assert!(shared.iter().all(|p| p["ownedBy"] == owner_side), "pods belong to shop-a through its ReplicaSet: {f:#}");
    // Parent and child (shop-a and its ReplicaSet) are never reported against each other.
    assert!(report["findings"].as_array().unwrap().iter().all(|f| f["a"]["kind"] == f["b"]["kind"]));
    assert!(find(&report, "db-main", "db-prod").is_none());
    let sep = report["disjoint"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["a"]["name"] == "db-main" || d["b"]["name"] == "db-main")
        .unwrap();
    assert_eq!(sep["separation"]["key"], "env");

    let table = c.coord("viewer", &["overlaps", "-n", ns, "--explain"]).ok();
    let header = table.stdout.lines().next().unwrap();
    // One namespace: no NAMESPACE column, as kubectl prints it only with -A.
    assert!(header.starts_with("KIND") && header.contains("WITNESS") && header.contains("LIVE PODS"), "{header}");
    assert!(
        table.stdout.contains(&format!(
            "disjoint: {ns}/Deployment db-main / Deployment db-prod: env: every In value is excluded by NotIn"
        )),
        "{}",
        table.stdout
    );
    let shop = table.stdout.lines().find(|l| l.contains(" shop-a ") && l.contains(" shop-b ")).unwrap();
    assert!(shop.contains(" error ") && shop.ends_with(" 2"), "{shop}");
    c.coord("viewer", &["overlaps", "-n", ns, "--exit-code"]).code(3);
    c.coord("viewer", &["overlaps", "-n", ns, "--exit-code", "-l", "app=nothing-here"]).code(0);
}

#[test]
fn statefulset_against_deployment_only_with_cross_kind() {
    let c = cluster();
    let ns = &c.fresh_namespace("coord-overlap-cross");
    c.apply(&deployment(ns, "cache-web", "{matchLabels: {app: cache, role: web}}", "{app: cache, role: web}", 0));
    c.apply(&format!(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: cache, namespace: {ns}}}\nspec:\n  serviceName: cache\n  replicas: 0\n  selector: {{matchLabels: {{app: cache}}}}\n  template:\n    metadata: {{labels: {{app: cache}}}}\n    spec: {{containers: [{{name: c, image: registry.k8s.io/pause:3.10}}]}}\n"
    ));
    let same = c.coord("viewer", &["overlaps", "-n", ns, "-o", "json"]).ok().json();
    assert!(same["findings"].as_array().unwrap().is_empty(), "{same:#}");
    let cross = c.coord("viewer", &["overlaps", "-n", ns, "-o", "json", "--cross-kind"]).ok().json();
    let f = find(&cross, "cache", "cache-web").unwrap_or_else(|| panic!("{cross:#}"));
    // cache-web's template {app: cache, role: web} satisfies the StatefulSet's selector.
    assert_eq!(f["severity"], "error");
    c.coord("viewer", &["overlaps", "-n", ns, "--exit-code"]).code(0);
    c.coord("viewer", &["overlaps", "-n", ns, "--cross-kind", "--exit-code", "--min-severity", "error"]).code(3);
}

#[test]
fn orphaned_pods_adopted_by_an_overlapping_replicaset_and_two_pdbs() {
    let c = cluster();
    let ns = &c.fresh_namespace("coord-overlap-adopt");
    c.apply(&replicaset(ns, "rs-old", "{matchLabels: {app: adopt, track: a}}", "{app: adopt, track: a}", 2));
    let before = pods_with(&c, ns, "app=adopt", 2, "ReplicaSet");
    c.kubectl(&["-n", ns, "delete", "replicaset", "rs-old", "--cascade=orphan", "--wait=true"]).ok();
    // The real ReplicaSet controller adopts the orphans into an overlapping ReplicaSet.
    c.apply(&replicaset(
        ns,
        "rs-new",
        "{matchExpressions: [{key: app, operator: In, values: [adopt]}]}",
        "{app: adopt}",
        2,
    ));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pods = c.kubectl(&["-n", ns, "get", "pods", "-l", "app=adopt,track=a", "-o", "json"]).ok().json();
        let adopted = pods["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["metadata"]["ownerReferences"][0]["name"] == "rs-new")
            .count();
        if adopted == before.len() {
            break;
        }
        assert!(Instant::now() < deadline, "rs-new did not adopt the orphans: {pods:#}");
        std::thread::sleep(Duration::from_millis(300));
    }
    // A second overlapping ReplicaSet (scaled to zero) now shares those pods.
    c.apply(&replicaset(ns, "rs-track-a", "{matchLabels: {app: adopt, track: a}}", "{app: adopt, track: a}", 0));
    c.apply(&format!("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: pdb-app, namespace: {ns}}}\nspec: {{minAvailable: 1, selector: {{matchLabels: {{app: adopt}}}}}}\n"));
    c.apply(&format!("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: pdb-track, namespace: {ns}}}\nspec: {{maxUnavailable: 1, selector: {{matchLabels: {{track: a}}}}}}\n"));

    let report = c.coord("viewer", &["overlaps", "-n", ns, "-o", "json"]).ok().json();
    let f = find(&report, "rs-new", "rs-track-a").unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(f["severity"], "error");
    let shared = f["sharedPods"].as_array().unwrap();
    assert_eq!(shared.len(), 2, "{f:#}");
    let new_side = if f["a"]["name"] == "rs-new" { "a" } else { "b" };
    assert!(shared.iter().all(|p| p["ownedBy"] == new_side), "{f:#}");
    let conflicts = report["pdbConflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 2, "{report:#}");
    assert!(conflicts.iter().all(|c| c["budgets"] == serde_json::json!(["pdb-app", "pdb-track"])));
    let table = c.coord("viewer", &["overlaps", "-n", ns]).ok();
    assert!(table.stdout.contains("matched by 2 PodDisruptionBudgets (pdb-app, pdb-track)"), "{}", table.stdout);
}

#[test]
fn limited_rights_report_what_was_skipped() {
    let c = cluster();
    let run = c.coord("limited", &["overlaps", "-A"]);
    // Every cluster-wide list is forbidden: the context's namespace is read instead, said so.
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ns = c.limited_namespace();
    assert!(
        run.stderr.contains(&format!(
            "deployments: listing across all namespaces is forbidden; read namespace by namespace: {ns}"
        )),
        "{}",
        run.stderr
    );
    let run = c.coord("limited", &["overlaps", "-A", "-o", "json"]).ok();
    let skipped = run.json()["skipped"].as_array().unwrap().len();
    assert_eq!(skipped, 8, "seven kinds and pods: {}", run.stdout);
    c.coord("viewer", &["overlaps", "-l", "a in ("]).code(2).one_line_error("-l: invalid selector");
}

/// The pairs of a report as unordered name pairs with their severity, and its pods under
/// several budgets.
fn pairs_and_budgets(report: &Value) -> (Vec<(String, String, String)>, usize) {
    let mut pairs: Vec<(String, String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let (a, b) = (f["a"]["name"].as_str().unwrap(), f["b"]["name"].as_str().unwrap());
            let (a, b) = if a < b { (a, b) } else { (b, a) };
            (a.to_string(), b.to_string(), f["severity"].as_str().unwrap().to_string())
        })
        .collect();
    pairs.sort();
    (pairs, report["pdbConflicts"].as_array().unwrap().len())
}

/// Manifests before they are applied (overlaps -f, kubernetes#30899): a canary whose selector
/// takes the live stable pods and two budgets over them are predicted against the live
/// objects, each named with its file and document; `kubectl apply` of the same files then
/// makes exactly those findings live. --offline compares the files alone; bad files are one
/// line each, and exit 2 when nothing can be read.
#[test]
fn manifests_predict_the_overlaps_their_apply_makes() {
    let c = cluster();
    let ns = &c.fresh_namespace("coord-overlap-files");
    c.apply(&deployment(ns, "stable", "{matchLabels: {app: shop, track: stable}}", "{app: shop, track: stable}", 2));
    pods_with(&c, ns, "app=shop,track=stable", 2, "ReplicaSet");
    let dir = std::env::temp_dir().join(format!("{ns}-files"));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    // No namespace in the files: -n's, as kubectl apply -n puts them.
    let canary = deployment(ns, "canary", "{matchLabels: {app: shop}}", "{app: shop, track: canary}", 1)
        .replace(&format!(", namespace: {ns}"), "");
    std::fs::write(dir.join("canary.yaml"), canary).unwrap();
    std::fs::write(
        dir.join("sub/budgets.yaml"),
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: shop}\nspec: {minAvailable: 1, selector: {matchLabels: {app: shop}}}\n---\n\
         apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: stable}\nspec: {minAvailable: 1, selector: {matchLabels: {track: stable}}}\n",
    )
    .unwrap();
    std::fs::write(dir.join("notes.txt"), "not a manifest").unwrap();
    let files = dir.to_str().unwrap();

    let run =
        c.kubectl_plugin("viewer", &["overlaps", "-n", ns, "-f", files, "-R", "--exit-code", "-o", "json"]).code(3);
    assert!(run.stderr.contains("1 file not .json, .yaml or .yml left out"), "{}", run.stderr);
    let predicted = run.json();
    let (pairs, budgets) = pairs_and_budgets(&predicted);
    assert_eq!(
        pairs,
        [
            ("canary".to_string(), "stable".to_string(), "error".to_string()),
            ("shop".to_string(), "stable".to_string(), "error".to_string()),
        ],
        "{predicted:#}"
    );
    assert_eq!(budgets, 2, "the two live stable pods under both budgets: {predicted:#}");
    let canary_pair = find(&predicted, "canary", "stable").unwrap();
    assert_eq!(canary_pair["sharedPodCounts"]["total"], 2, "the live stable pods: {canary_pair:#}");
    let origins: Vec<(String, u64, bool)> = predicted["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let file = f["file"].as_str().unwrap().rsplit('/').next().unwrap().to_string();
            (format!("{}/{file}", f["name"].as_str().unwrap()), f["document"].as_u64().unwrap(), f["replaces"] == true)
        })
        .collect();
    assert_eq!(
        origins,
        [
            ("canary/canary.yaml".to_string(), 1, false),
            ("shop/budgets.yaml".to_string(), 1, false),
            ("stable/budgets.yaml".to_string(), 2, false),
        ]
    );
    // Without -R the budgets under sub/ are not read; the table names each file's object
    // with its file and document.
    let table = c.kubectl_plugin("viewer", &["overlaps", "-n", ns, "-f", files]).ok();
    let row = format!("{files}/canary.yaml#1");
    assert!(
        table
            .stdout
            .lines()
            .any(|l| l.split_whitespace().take(3).any(|w| w == "canary") && l.trim_end().ends_with(&row)),
        "{}",
        table.stdout
    );
    assert!(!table.stdout.contains("budgets.yaml"), "{}", table.stdout);

    // Applied as they are, the same findings are live.
    c.kubectl(&["apply", "-n", ns, "-R", "-f", files]).ok();
    pods_with(&c, ns, "app=shop,track=canary", 1, "ReplicaSet");
    let live = c.coord("viewer", &["overlaps", "-n", ns, "-o", "json"]).ok().json();
    assert_eq!(
        pairs_and_budgets(&live),
        (pairs.clone(), budgets),
        "predicted before the apply: {predicted:#}\nlive: {live:#}"
    );
    // Now each file object stands in place of its live self, with the same findings.
    let again = c.coord("viewer", &["overlaps", "-n", ns, "-f", files, "-R", "-o", "json"]).ok().json();
    assert!(again["files"].as_array().unwrap().iter().all(|f| f["replaces"] == true), "{again:#}");
    assert_eq!(pairs_and_budgets(&again).0, pairs);

    // The files alone, no cluster: only the two budgets meet.
    let offline = c.coord_bare(&["overlaps", "--offline", "-f", files, "-R", "-o", "json"]).ok().json();
    assert_eq!(
        pairs_and_budgets(&offline),
        (vec![("shop".to_string(), "stable".to_string(), "warning".to_string())], 0),
        "{offline:#}"
    );

    // Bad input: a broken document among good ones is skipped and said; nothing readable is exit 2.
    std::fs::write(dir.join("broken.yaml"), "kind: [\n").unwrap();
    let some = c.coord("viewer", &["overlaps", "-n", ns, "-f", files, "-o", "json"]).ok();
    assert!(some.stderr.contains("broken.yaml#1: not YAML or JSON"), "{}", some.stderr);
    let broken = dir.join("broken.yaml");
    c.coord("viewer", &["overlaps", "-n", ns, "-f", broken.to_str().unwrap()])
        .code(2)
        .one_line_error("no Kubernetes object could be read from the files");
    std::fs::remove_dir_all(&dir).unwrap();
}
