//! `kubectl coord check -f / -k`: manifests checked against the live cluster before they are
//! applied, then applied, with the real controllers (ReplicaSet adoption, the garbage
//! collector, the Deployment controller) as the oracle of what the prediction said.

mod common;

use std::collections::BTreeSet;

use common::{Cluster, cluster, wait_for};
use serde_json::Value;

fn deployment(ns: Option<&str>, name: &str, selector: &str, labels: &str, replicas: u32) -> String {
    let ns = ns.map(|n| format!(", namespace: {n}")).unwrap_or_default();
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}{ns}}}\nspec:\n  replicas: {replicas}\n  selector: {selector}\n  template:\n    metadata: {{labels: {labels}}}\n    spec: {{containers: [{{name: app, image: registry.k8s.io/pause:3.10}}]}}\n"
    )
}

/// (code, object, file name#document) of each finding.
fn found(report: &Value) -> BTreeSet<(String, String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let file = f["file"].as_str().unwrap_or("").rsplit('/').next().unwrap().to_string();
            (f["code"].as_str().unwrap().to_string(), f["object"].as_str().unwrap().to_string(), file)
        })
        .collect()
}

fn set(items: &[(&str, &str, &str)]) -> BTreeSet<(String, String, String)> {
    items.iter().map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())).collect()
}

fn running_pods(c: &Cluster, ns: &str, selector: &str, n: usize) {
    wait_for(&format!("{n} pods {selector} in {ns}"), 90, || {
        let out = c.kubectl(&["-n", ns, "get", "pods", "-l", selector, "-o", "json"]).ok().json();
        out["items"].as_array().unwrap().len() >= n
    });
}

/// Every must-catch case at once: a canary whose selector takes the live stable pods, two
/// budgets over them, a ReplicaSet that would adopt a live orphan pod, a ConfigMap owned by
/// a Deployment that does not exist and one naming the live Deployment by an old uid, and the
/// live Deployment itself with replicas an autoscaler owns. Each is predicted, named with its
/// file and document; `kubectl apply` of the same files then makes each happen.
#[test]
fn manifests_predict_what_their_apply_does() {
    let c = cluster();
    let ns = &c.fresh_namespace("coord-before-apply");
    c.apply(&deployment(
        Some(ns),
        "stable",
        "{matchLabels: {app: shop, track: stable}}",
        "{app: shop, track: stable}",
        2,
    ));
    c.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: stray, namespace: {ns}, labels: {{app: cache}}}}\nspec: {{containers: [{{name: c, image: registry.k8s.io/pause:3.10}}]}}\n"
    ));
    running_pods(&c, ns, "app=shop,track=stable", 2);
    // An autoscaler takes replicas through the scale subresource, as an HPA does.
    c.kubectl(&[
        "-n",
        ns,
        "patch",
        "deployment",
        "stable",
        "--subresource=scale",
        "--field-manager=autoscaler",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ])
    .ok();
    running_pods(&c, ns, "app=shop,track=stable", 3);

    let dir = std::env::temp_dir().join(format!("{ns}-release"));
    std::fs::create_dir_all(&dir).unwrap();
    let canary = deployment(None, "canary", "{matchLabels: {app: shop}}", "{app: shop, track: canary}", 1);
    std::fs::write(dir.join("canary.yaml"), &canary).unwrap();
    std::fs::write(
        dir.join("budgets.yaml"),
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: shop}\nspec: {minAvailable: 1, selector: {matchLabels: {app: shop}}}\n---\n\
         apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: stable}\nspec: {minAvailable: 1, selector: {matchLabels: {track: stable}}}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("cache.yaml"),
        deployment(None, "cache", "{matchLabels: {app: cache}}", "{app: cache}", 1)
            .replace("kind: Deployment", "kind: ReplicaSet"),
    )
    .unwrap();
    std::fs::write(
        dir.join("settings.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: gone, uid: 33333333-3333-3333-3333-333333333333}]\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stale\n  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: stable, uid: 44444444-4444-4444-4444-444444444444}]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("stable.yaml"),
        deployment(None, "stable", "{matchLabels: {app: shop, track: stable}}", "{app: shop, track: stable}", 2),
    )
    .unwrap();
    let files = dir.to_str().unwrap();

    let run = c.kubectl_plugin("viewer", &["check", "-n", ns, "-f", files, "--exit-code", "-o", "json"]).code(3);
    let predicted = run.json();
    common::schema::conforms(&predicted);
    assert_eq!(
        found(&predicted),
        set(&[
            ("CO201", "configmap/settings", "settings.yaml#1"),
            ("CO201", "configmap/stale", "settings.yaml#2"),
            ("CO301", "deployment.apps/canary", "canary.yaml#1"),
            ("CO301", "poddisruptionbudget.policy/shop", "budgets.yaml#1"),
            ("CO302", "poddisruptionbudget.policy/shop", "budgets.yaml#1"),
            ("CO303", "replicaset.apps/cache", "cache.yaml#1"),
            ("CO408", "deployment.apps/stable", "stable.yaml#1"),
        ]),
        "{predicted:#}"
    );
    assert_eq!(predicted["complete"], true, "everything the files touch was read: {predicted:#}");
    assert!(predicted.get("notCovered").is_none(), "{predicted:#}");
    let taken = predicted["findings"].as_array().unwrap().iter().find(|f| f["code"] == "CO408").unwrap();
    assert!(
        taken["message"].as_str().unwrap().contains(".spec.replicas from 3 to 2, owned by autoscaler (scale)"),
        "{taken:#}"
    );
    // --server-dry-run: the server's own answer, to a server-side apply as a dry run
    // (nothing is written: tests/audit.rs reads every such request), where the user may patch.
    let dry =
        c.kubectl_plugin("admin", &["check", "-n", ns, "-f", files, "--server-dry-run", "-o", "json"]).ok().json();
    assert_eq!(found(&dry), found(&predicted), "{dry:#}");
    let taken = dry["findings"].as_array().unwrap().iter().find(|f| f["code"] == "CO408").unwrap();
    let message = taken["message"].as_str().unwrap();
    assert!(message.contains(".spec.replicas from 3 to 2, owned by autoscaler (scale)"), "{taken:#}");
    assert!(message.contains("the server's answer to a dry-run apply"), "{taken:#}");
    // A viewer may not patch: managedFields answer, and one warning says so.
    let refused = c.kubectl_plugin("viewer", &["check", "-n", ns, "-f", files, "--server-dry-run", "-o", "json"]).ok();
    assert!(refused.stderr.contains("--server-dry-run: not allowed to patch Deployment stable"), "{}", refused.stderr);
    assert_eq!(found(&refused.json()), found(&predicted));
    // The table names each object with its file and document.
    let table = c.kubectl_plugin("viewer", &["check", "-n", ns, "-f", files]).ok();
    assert!(table.stdout.contains(&format!("replicaset.apps/cache ({files}/cache.yaml#1)")), "{}", table.stdout);
    assert!(table.stderr.contains("leases and trace judge what runs"), "{}", table.stderr);

    // Applied as they are: the real controllers do what was predicted.
    c.kubectl(&["apply", "-n", ns, "-f", files]).ok();
    running_pods(&c, ns, "app=shop,track=canary", 1);
    wait_for("the ReplicaSet to adopt the orphan pod", 60, || {
        let pod = c.kubectl(&["-n", ns, "get", "pod", "stray", "-o", "json"]).ok().json();
        pod["metadata"]["ownerReferences"].as_array().is_some_and(|r| r.iter().any(|r| r["name"] == "cache"))
    });
    wait_for("the garbage collector to delete both ConfigMaps", 60, || {
        let out = c.kubectl(&["-n", ns, "get", "configmaps", "-o", "name"]).ok();
        !out.stdout.contains("configmap/settings") && !out.stdout.contains("configmap/stale")
    });
    let deploy =
        c.kubectl(&["-n", ns, "get", "deployment", "stable", "-o", "json", "--show-managed-fields"]).ok().json();
    assert_eq!(deploy["spec"]["replicas"], 2, "client-side apply overwrote the autoscaler's replicas");
    let live = c.coord("viewer", &["check", "-n", ns, "--only", "overlaps", "-o", "json"]).ok().json();
    let live_found = found(&live);
    for (code, object) in [("CO301", "deployment.apps/canary"), ("CO302", "poddisruptionbudget.policy/shop")] {
        let other = match object {
            "deployment.apps/canary" => "deployment.apps/stable",
            _ => object,
        };
        assert!(
            live_found.iter().any(|(c, o, _)| c == code && (o == object || o == other)),
            "{code} {object} predicted, not live: {live:#}"
        );
    }

    // -k: the kustomization built by kubectl kustomize, named as its directory.
    let kdir = dir.join("kustomize");
    std::fs::create_dir_all(&kdir).unwrap();
    std::fs::write(kdir.join("kustomization.yaml"), "resources: [canary.yaml]\nnamePrefix: new-\n").unwrap();
    std::fs::write(kdir.join("canary.yaml"), &canary).unwrap();
    let k = c.kubectl_plugin("viewer", &["check", "-n", ns, "-k", kdir.to_str().unwrap(), "-o", "json"]).ok().json();
    let k_found = found(&k);
    assert!(
        k_found.iter().any(|(code, object, file)| code == "CO301"
            && object == "deployment.apps/new-canary"
            && file == "kustomize (kustomize)#1"),
        "{k:#}"
    );

    // --offline: the files alone; what needs the cluster is not covered, exit 4 when clean.
    let offline = c
        .coord_bare(&[
            "check",
            "--offline",
            "-n",
            ns,
            "-f",
            dir.join("settings.yaml").to_str().unwrap(),
            "--exit-code",
            "-o",
            "json",
        ])
        .code(4)
        .json();
    let uncovered: Vec<&str> =
        offline["notCovered"].as_array().unwrap().iter().map(|n| n["mechanism"].as_str().unwrap()).collect();
    assert_eq!(uncovered, ["owners", "fields"], "{offline:#}");
    let only = c
        .coord_bare(&["check", "--offline", "--only", "overlaps", "-f", files, "--exit-code", "-o", "json"])
        .code(3)
        .json();
    assert_eq!(only["complete"], true, "{only:#}");

    // Bad input: one line, exit 2.
    c.coord_bare(&["check", "--offline"]).code(2).one_line_error("--offline checks files alone");
    std::fs::write(dir.join("broken.yaml"), "kind: [\n").unwrap();
    c.coord("viewer", &["check", "-n", ns, "-f", dir.join("broken.yaml").to_str().unwrap()])
        .code(2)
        .one_line_error("no Kubernetes object could be read from the files");
    c.kubectl_plugin("viewer", &["check", "-n", ns, "-k", files]).code(2).one_line_error("kubectl kustomize");
    std::fs::remove_dir_all(&dir).unwrap();
}
