//! `kubectl coord owners` against the real local control plane: trees built by the
//! real Deployment and ReplicaSet controllers, a CRD owning namespaced and
//! cluster-scoped objects, every finding produced for real, and the cascade preview
//! compared object for object with what the real garbage collector deletes.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{Cluster, cluster, wait_for};
use serde_json::Value;

#[track_caller]
fn uid(c: &Cluster, ns: Option<&str>, what: &str) -> String {
    let mut args = vec!["get", what, "-o", "jsonpath={.metadata.uid}"];
    if let Some(ns) = ns {
        args.extend(["-n", ns]);
    }
    let u = c.kubectl(&args).ok().stdout;
    assert!(!u.is_empty(), "no uid for {what}");
    u
}

fn deployment(c: &Cluster, ns: &str, name: &str, replicas: u32) {
    c.apply(&format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers:\n      - {{name: c, image: registry.k8s.io/pause:3.10}}\n"
    ));
    wait_for("the ReplicaSet controller's pods", 90, || {
        let pods = c.kubectl(&["-n", ns, "get", "pods", "-l", &format!("app={name}"), "-o", "name"]).ok().stdout;
        pods.lines().count() == replicas as usize
    });
}

/// An owner reference in YAML flow style.
fn owner_ref(api_version: &str, kind: &str, name: &str, uid: &str, controller: bool, block: bool) -> String {
    format!(
        "{{apiVersion: {api_version}, kind: {kind}, name: {name}, uid: \"{uid}\", controller: {controller}, blockOwnerDeletion: {block}}}"
    )
}

fn configmap(ns: &str, name: &str, owners: &[String], finalizers: &[&str]) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n  ownerReferences: [{}]\n  finalizers: [{}]\n",
        owners.join(", "),
        finalizers.join(", ")
    )
}

fn kinds_and_names(report: &Value, list: &str) -> BTreeSet<(String, String)> {
    report[list]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|n| (n["kind"].as_str().unwrap().to_string(), n["name"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn deployment_tree_built_by_the_real_controllers() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-owners-tree");
    deployment(&c, &ns, "web", 2);
    // kwok's nodes run them: wait until the ReplicaSet controller counts both ready.
    wait_for("both pods ready", 90, || {
        c.kubectl(&["-n", &ns, "get", "rs", "-l", "app=web", "-o", "jsonpath={.items[0].status.readyReplicas}"])
            .ok()
            .stdout
            == "2"
    });
    let rs_name = c.kubectl(&["-n", &ns, "get", "rs", "-o", "jsonpath={.items[0].metadata.name}"]).ok().stdout;
    let pods: Vec<String> = c
        .kubectl(&["-n", &ns, "get", "pods", "-o", "jsonpath={.items[*].metadata.name}"])
        .ok()
        .stdout
        .split_whitespace()
        .map(str::to_string)
        .collect();

    let report = c.coord("viewer", &["owners", "deploy/web", "-n", &ns, "-o", "json"]).ok().json();
    assert_eq!(report["kind"], "OwnerGraph");
    assert_eq!(report["complete"], true);
    let mut want: BTreeSet<(String, String)> =
        [("Deployment".to_string(), "web".to_string()), ("ReplicaSet".into(), rs_name.clone())].into();
    want.extend(pods.iter().map(|p| ("Pod".to_string(), p.clone())));
    assert_eq!(kinds_and_names(&report, "nodes"), want);
    let deploy_uid = uid(&c, Some(&ns), "deploy/web");
    let rs_uid = uid(&c, Some(&ns), &format!("rs/{rs_name}"));
    let edges = report["edges"].as_array().unwrap();
    assert_eq!(edges.len(), 3, "{edges:?}");
    let top = edges.iter().find(|e| e["dependent"] == rs_uid.as_str()).unwrap();
    assert_eq!(top["owner"], deploy_uid.as_str());
    assert_eq!((top["controller"].clone(), top["blockOwnerDeletion"].clone()), (true.into(), true.into()));
    assert_eq!(edges.iter().filter(|e| e["owner"] == rs_uid.as_str()).count(), 2);
    assert!(report["findings"].as_array().unwrap().is_empty());
    // Status read from the full objects of printed rows: the real readiness kwok reports.
    let rs_node = report["nodes"].as_array().unwrap().iter().find(|n| n["kind"] == "ReplicaSet").unwrap();
    assert_eq!(rs_node["status"], "2/2 ready");
    let pod_node = report["nodes"].as_array().unwrap().iter().find(|n| n["kind"] == "Pod").unwrap();
    assert_eq!(pod_node["status"], "Running");

    // From a pod, upward, through kubectl's plugin discovery, with kubectl's other argument forms.
    let up = c.kubectl_plugin("viewer", &["owners", "pod", &pods[0], "-n", &ns, "--up"]).ok();
    let lines: Vec<&str> = up.stdout.lines().collect();
    assert!(
        lines[0].starts_with("KIND") && lines[0].contains("CONTROLLER") && lines[0].contains("BLOCKS"),
        "{up:?}",
        up = up.stdout
    );
    assert!(lines[1].starts_with("Deployment ") && lines[1].contains("web"), "{}", up.stdout);
    assert!(lines[2].starts_with("└─ReplicaSet") && lines[2].contains(&rs_name), "{}", up.stdout);
    assert!(
        lines[3].starts_with("  └─Pod") && lines[3].contains(&pods[0]) && lines[3].contains("Running"),
        "{}",
        up.stdout
    );
    assert_eq!(lines.len(), 4, "the other pod is a sibling, not an owner: {}", up.stdout);
    let shallow = c
        .coord("viewer", &["owners", "deployments.apps/web", "-n", &ns, "--down", "--depth", "1", "-o", "json"])
        .ok()
        .json();
    assert_eq!(
        kinds_and_names(&shallow, "nodes"),
        [("Deployment".to_string(), "web".to_string()), ("ReplicaSet".into(), rs_name)].into()
    );
}

#[test]
fn custom_resource_owns_namespaced_and_cluster_scoped_objects() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-owners-crd");
    c.apply(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: stacks.coord.test}\nspec:\n  group: coord.test\n  scope: Cluster\n  names: {plural: stacks, singular: stack, kind: Stack, shortNames: [stk]}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n",
    );
    c.kubectl(&["wait", "--for=condition=Established", "crd/stacks.coord.test", "--timeout=60s"]).ok();
    let stack = format!("{ns}-stack");
    // Discovery may lag the Established condition by a moment: retry the create.
    let path = c.dir.join(format!("{stack}.yaml"));
    std::fs::write(&path, format!("apiVersion: coord.test/v1\nkind: Stack\nmetadata: {{name: {stack}}}\n")).unwrap();
    wait_for("the Stack kind in discovery", 30, || c.kubectl(&["apply", "-f", path.to_str().unwrap()]).code == 0);
    let stack_uid = uid(&c, None, &format!("stack/{stack}"));
    let by_stack = owner_ref("coord.test/v1", "Stack", &stack, &stack_uid, true, true);
    c.apply(&configmap(&ns, "settings", std::slice::from_ref(&by_stack), &[]));
    let role = format!("{ns}-role");
    c.apply(&format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {role}\n  ownerReferences: [{by_stack}]\nrules: []\n"
    ));

    for form in ["stk/", "stack/", "stacks.coord.test/", "Stack/"] {
        let arg = format!("{form}{stack}");
        let report = c.coord("viewer", &["owners", &arg, "-o", "json"]).ok().json();
        assert_eq!(
            kinds_and_names(&report, "nodes"),
            [
                ("Stack".to_string(), stack.clone()),
                ("ConfigMap".into(), "settings".into()),
                ("ClusterRole".into(), role.clone())
            ]
            .into(),
            "{arg}"
        );
        let cm = report["nodes"].as_array().unwrap().iter().find(|n| n["kind"] == "ConfigMap").unwrap();
        assert_eq!(cm["namespace"], ns.as_str());
    }
    // Up from the namespaced ConfigMap: its namespace is listed, then the cluster-scoped kind
    // it names as owner (Stack), and no other cluster-scoped type.
    let trace = c.dir.join(format!("{ns}-up-trace.txt"));
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
    cmd.args(["owners", "cm/settings", "-n", &ns, "--up", "-o", "json"])
        .env("KUBECONFIG", c.kubeconfig("viewer"))
        .env("KUBECTL_COORD_TRACE", &trace);
    let up = common::Run::of(cmd).ok().json();
    assert_eq!(up["complete"], true);
    assert_eq!(
        kinds_and_names(&up, "nodes"),
        [("Stack".to_string(), stack.clone()), ("ConfigMap".into(), "settings".into())].into()
    );
    let sent = std::fs::read_to_string(&trace).unwrap();
    assert!(sent.contains("/apis/coord.test/v1/stacks?"), "{sent}");
    assert!(!sent.contains("/apis/rbac.authorization.k8s.io/v1/clusterroles?"), "{sent}");

    let table = c.coord("viewer", &["owners", &format!("stk/{stack}")]).ok().stdout;
    let header = table.lines().next().unwrap();
    assert!(header.contains("NAMESPACE"), "the tree spans namespaces: {table}");
    assert!(table.lines().any(|l| l.contains("ConfigMap") && l.contains(&ns)), "{table}");
}

#[test]
fn every_finding_built_for_real() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-owners-findings");
    let far = c.fresh_namespace("coord-owners-far");
    let hold = "coord.test/hold";

    // Dangling: the owner is deleted (the GC then deletes the dependent, which a finalizer
    // keeps in Terminating) and recreated under the same name with a new uid.
    c.apply(&configmap(&ns, "owner", &[], &[]));
    let old_uid = uid(&c, Some(&ns), "cm/owner");
    c.apply(&configmap(&ns, "dependent", &[owner_ref("v1", "ConfigMap", "owner", &old_uid, false, false)], &[hold]));
    c.kubectl(&["-n", &ns, "delete", "cm", "owner"]).ok();
    wait_for("the garbage collector to delete the dependent", 60, || {
        !c.kubectl(&["-n", &ns, "get", "cm", "dependent", "-o", "jsonpath={.metadata.deletionTimestamp}"])
            .ok()
            .stdout
            .is_empty()
    });
    c.apply(&configmap(&ns, "owner", &[], &[]));
    let new_uid = uid(&c, Some(&ns), "cm/owner");
    assert_ne!(old_uid, new_uid);

    // Across namespaces: the GC treats the reference as absent and deletes the dependent.
    c.apply(&configmap(&far, "far-owner", &[], &[]));
    let far_uid = uid(&c, Some(&far), "cm/far-owner");
    c.apply(&configmap(&ns, "cross", &[owner_ref("v1", "ConfigMap", "far-owner", &far_uid, false, false)], &[hold]));

    // A cluster-scoped dependent of a namespaced owner.
    let role = format!("{ns}-role");
    c.apply(&format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {role}\n  ownerReferences: [{}]\nrules: []\n",
        owner_ref("v1", "ConfigMap", "owner", &new_uid, false, false)
    ));

    // A cycle: a owns b, b owns a.
    c.apply(&configmap(&ns, "cycle-a", &[], &[]));
    let a_uid = uid(&c, Some(&ns), "cm/cycle-a");
    c.apply(&configmap(&ns, "cycle-b", &[owner_ref("v1", "ConfigMap", "cycle-a", &a_uid, false, false)], &[]));
    let b_uid = uid(&c, Some(&ns), "cm/cycle-b");
    c.apply(&configmap(&ns, "cycle-a", &[owner_ref("v1", "ConfigMap", "cycle-b", &b_uid, false, false)], &[]));

    // Stuck in deletion.
    c.apply(&configmap(&ns, "stuck", &[], &[hold]));
    c.kubectl(&["-n", &ns, "delete", "cm", "stuck", "--wait=false"]).ok();

    // Two controller references: the API server refuses them, so that finding can only
    // come from a server that does not validate (it stays covered by unit tests).
    let two = configmap(
        &ns,
        "two-bosses",
        &[
            owner_ref("v1", "ConfigMap", "cycle-a", &a_uid, true, false),
            owner_ref("v1", "ConfigMap", "cycle-b", &b_uid, true, false),
        ],
        &[],
    );
    let path = c.dir.join(format!("{ns}-two.yaml"));
    std::fs::write(&path, two).unwrap();
    let refused = c.kubectl(&["apply", "-f", path.to_str().unwrap()]);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("Only one reference can have Controller set to true"), "{}", refused.stderr);

    let scan = c.coord("viewer", &["owners", "--all", "-A", "--stuck-after", "0s", "-o", "json"]).ok().json();
    assert_eq!(scan["kind"], "OwnerScan");
    let found: BTreeSet<(String, String)> = scan["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["object"]["namespace"] == ns.as_str() || f["object"]["name"] == role.as_str())
        .map(|f| (f["kind"].as_str().unwrap().to_string(), f["object"]["name"].as_str().unwrap().to_string()))
        .collect();
    let want: BTreeSet<(String, String)> = [
        ("dangling-reference", "dependent"),
        ("stuck-in-deletion", "dependent"),
        ("cross-namespace-reference", "cross"),
        ("cluster-scoped-dependent", role.as_str()),
        ("reference-cycle", "cycle-a"),
        ("stuck-in-deletion", "stuck"),
    ]
    .iter()
    .map(|(k, n)| (k.to_string(), n.to_string()))
    .collect();
    // "cross" may already be Terminating too (the GC deleted it): allow that one extra.
    let extra: BTreeSet<_> = found.difference(&want).cloned().collect();
    assert!(
        want.is_subset(&found) && extra.iter().all(|(k, n)| k == "stuck-in-deletion" && n == "cross"),
        "found {found:?}"
    );
    let dangling = scan["findings"].as_array().unwrap().iter().find(|f| f["kind"] == "dangling-reference").unwrap();
    let message = dangling["message"].as_str().unwrap();
    assert!(message.contains(&new_uid) && message.contains(&old_uid) && message.contains("recreated"), "{message}");
    assert_eq!(dangling["reference"]["uid"], old_uid.as_str());

    // The GC agrees that the cross-namespace reference counts as absent.
    wait_for("the garbage collector to delete the cross-namespace dependent", 60, || {
        !c.kubectl(&["-n", &ns, "get", "cm", "cross", "-o", "jsonpath={.metadata.deletionTimestamp}"])
            .ok()
            .stdout
            .is_empty()
    });

    // Text, exit codes, and the default threshold (5m) not yet reached.
    let text = c.coord("viewer", &["owners", "--all", "-n", &ns, "--exit-code"]).code(3);
    assert!(text.stdout.contains("dangling-reference") && text.stdout.contains("reference-cycle"), "{}", text.stdout);
    assert!(!text.stdout.contains("stuck-in-deletion"), "{}", text.stdout);
    c.coord("viewer", &["owners", "--all", "-n", &ns]).code(0);
    let tree = c.coord("viewer", &["owners", "cm/dependent", "-n", &ns, "--stuck-after", "1s", "--exit-code"]).code(3);
    assert!(tree.stdout.contains("Terminating (finalizers: coord.test/hold)"), "{}", tree.stdout);
    assert!(tree.stdout.contains("stuck-in-deletion"), "{}", tree.stdout);

    for name in ["dependent", "cross", "stuck"] {
        c.kubectl(&["-n", &ns, "patch", "cm", name, "--type=merge", "-p", "{\"metadata\":{\"finalizers\":null}}"]);
    }
}

/// Everything in `ns` (the kinds the test creates), by uid.
fn inventory(c: &Cluster, ns: &str) -> BTreeSet<String> {
    let out = c
        .kubectl(&[
            "-n",
            ns,
            "get",
            "deploy,rs,pods,cm",
            "-o",
            "jsonpath={range .items[*]}{.metadata.uid}{\"\\n\"}{end}",
        ])
        .ok()
        .stdout;
    out.lines().map(str::to_string).collect()
}

fn uids(report: &Value, pointer: &str) -> BTreeSet<String> {
    report
        .pointer(pointer)
        .and_then(Value::as_array)
        .unwrap_or(&Vec::new())
        .iter()
        .map(|o| o.get("object").unwrap_or(o)["uid"].as_str().unwrap().to_string())
        .collect()
}

fn cascade_agrees_with_the_garbage_collector(policy: &str) {
    let c = cluster();
    let ns = c.fresh_namespace(&format!("coord-owners-{policy}"));
    deployment(&c, &ns, "web", 2);
    let deploy_uid = uid(&c, Some(&ns), "deploy/web");
    let rs_name = c.kubectl(&["-n", &ns, "get", "rs", "-o", "jsonpath={.items[0].metadata.name}"]).ok().stdout;
    let rs_uid = uid(&c, Some(&ns), &format!("rs/{rs_name}"));
    // A ConfigMap owned only by the Deployment, and one shared between the ReplicaSet and a live keeper.
    c.apply(&configmap(&ns, "solo", &[owner_ref("apps/v1", "Deployment", "web", &deploy_uid, false, true)], &[]));
    c.apply(&configmap(&ns, "keeper", &[], &[]));
    let keeper_uid = uid(&c, Some(&ns), "cm/keeper");
    c.apply(&configmap(
        &ns,
        "shared",
        &[
            owner_ref("apps/v1", "ReplicaSet", &rs_name, &rs_uid, false, true),
            owner_ref("v1", "ConfigMap", "keeper", &keeper_uid, false, false),
        ],
        &[],
    ));
    let shared_uid = uid(&c, Some(&ns), "cm/shared");
    let solo_uid = uid(&c, Some(&ns), "cm/solo");
    // Foreground: a blocking dependent held by a finalizer keeps the Deployment waiting,
    // while a non-blocking one is deleted at once.
    if policy == "foreground" {
        let held = owner_ref("apps/v1", "Deployment", "web", &deploy_uid, false, true);
        c.apply(&configmap(&ns, "held", &[held], &["coord.test/hold"]));
        c.apply(&configmap(&ns, "loose", &[owner_ref("apps/v1", "Deployment", "web", &deploy_uid, false, false)], &[]));
    }

    let before = inventory(&c, &ns);
    let run = c.coord("viewer", &["owners", "deploy/web", "-n", &ns, "--cascade", policy, "-o", "json"]).ok();
    let report = run.json();
    assert_eq!(report["cascade"][0]["policy"], policy);
    let predicted_delete = uids(&report, "/cascade/0/delete");
    let predicted_keep = uids(&report, "/cascade/0/keep");
    let predicted_orphan = uids(&report, "/cascade/0/orphan");
    let text = c.coord("viewer", &["owners", "deploy/web", "-n", &ns, "--cascade", policy]).ok().stdout;
    assert!(text.contains(&format!("kubectl delete --cascade={policy} Deployment {ns}/web would:")), "{text}");

    if policy == "foreground" {
        let order = report["cascade"][0]["order"].as_array().unwrap();
        let step_of = |u: &str| order.iter().position(|s| s.as_array().unwrap().iter().any(|o| o["uid"] == u)).unwrap();
        let (held_uid, loose_uid) = (uid(&c, Some(&ns), "cm/held"), uid(&c, Some(&ns), "cm/loose"));
        assert!(step_of(&loose_uid) < step_of(&deploy_uid), "a non-blocking dependent does not wait for its owner");
        assert!(step_of(&held_uid) < step_of(&deploy_uid), "the owner waits for its blocking dependent");
        c.kubectl(&["-n", &ns, "delete", "deploy", "web", "--cascade=foreground", "--wait=false"]).ok();
        // What the prediction says is already gone while the owner still waits.
        wait_for("the non-blocking dependent to go in the first pass", 60, || !inventory(&c, &ns).contains(&loose_uid));
        let waiting = c.kubectl(&["-n", &ns, "get", "deploy", "web", "-o", "json"]).ok().json();
        assert!(waiting["metadata"]["deletionTimestamp"].is_string(), "the Deployment waits, deleting");
        assert!(inventory(&c, &ns).contains(&held_uid), "held by its finalizer");
        c.kubectl(&["-n", &ns, "patch", "cm", "held", "--type=merge", "-p", "{\"metadata\":{\"finalizers\":null}}"])
            .ok();
    } else {
        c.kubectl(&["-n", &ns, "delete", "deploy", "web", &format!("--cascade={policy}"), "--timeout=90s"]).ok();
    }
    wait_for("the predicted deletions", 90, || inventory(&c, &ns).is_disjoint(&predicted_delete));
    // Let the collector finish anything it would do beyond the prediction.
    std::thread::sleep(Duration::from_secs(5));
    let after = inventory(&c, &ns);
    let deleted: BTreeSet<String> = before.difference(&after).cloned().collect();
    assert_eq!(deleted, predicted_delete, "{policy}: the garbage collector deleted exactly the predicted objects");

    match policy {
        "orphan" => {
            assert_eq!(predicted_orphan, [rs_uid.clone(), solo_uid.clone()].into());
            assert!(predicted_keep.is_empty());
            for orphan in [format!("rs/{rs_name}"), "cm/solo".to_string()] {
                wait_for("the orphaned object to lose its reference", 30, || {
                    !c.kubectl(&["-n", &ns, "get", &orphan, "-o", "jsonpath={.metadata.ownerReferences}"])
                        .ok()
                        .stdout
                        .contains(&deploy_uid)
                });
            }
        }
        _ => {
            assert!(predicted_delete.contains(&rs_uid) && predicted_delete.contains(&solo_uid));
            assert_eq!(predicted_keep, [shared_uid.clone()].into());
            wait_for("the kept object to lose only the deleted owner's reference", 30, || {
                let refs = c
                    .kubectl(&["-n", &ns, "get", "cm", "shared", "-o", "jsonpath={.metadata.ownerReferences[*].uid}"])
                    .ok()
                    .stdout;
                refs == keeper_uid
            });
        }
    }
    if policy == "foreground" {
        let blocks = report["cascade"][0]["blocks"].as_array().unwrap();
        assert!(
            blocks.iter().any(|b| b["reason"] == "block-owner-deletion"
                && b["object"]["uid"] == rs_uid.as_str()
                && b["owner"]["uid"] == deploy_uid.as_str()),
            "{blocks:?}"
        );
        let order = report["cascade"][0]["order"].as_array().unwrap();
        let step_of = |u: &str| order.iter().position(|s| s.as_array().unwrap().iter().any(|o| o["uid"] == u)).unwrap();
        assert!(step_of(&rs_uid) < step_of(&deploy_uid), "foreground: the ReplicaSet goes before the Deployment");
    }
}

#[test]
fn cascade_background_agrees_with_the_garbage_collector() {
    cascade_agrees_with_the_garbage_collector("background");
}

#[test]
fn cascade_foreground_agrees_with_the_garbage_collector() {
    cascade_agrees_with_the_garbage_collector("foreground");
}

#[test]
fn cascade_orphan_agrees_with_the_garbage_collector() {
    cascade_agrees_with_the_garbage_collector("orphan");
}

#[test]
fn limited_rights_print_what_is_readable_with_a_footer() {
    let c = cluster();
    let ns = c.limited_namespace();
    c.apply(&configmap(&ns, "lim-owner", &[], &[]));
    let owner_uid = uid(&c, Some(&ns), "cm/lim-owner");
    // Its namespace holds every dependent, and the limited user may read it: complete.
    c.apply(&configmap(&ns, "lim-dep", &[owner_ref("v1", "ConfigMap", "lim-owner", &owner_uid, true, true)], &[]));
    let json = c.coord("limited", &["owners", "cm/lim-owner", "-n", &ns, "-o", "json"]).ok().json();
    assert_eq!(json["complete"], true, "{json}");
    assert_eq!(kinds_and_names(&json, "nodes").len(), 2, "{json}");
    // A dependent that also names a Node as owner: nodes must be listed, which is forbidden.
    let node_uid = uid(&c, None, "node/kwok-node-0");
    c.apply(&configmap(
        &ns,
        "lim-dep",
        &[
            owner_ref("v1", "ConfigMap", "lim-owner", &owner_uid, true, true),
            owner_ref("v1", "Node", "kwok-node-0", &node_uid, false, false),
        ],
        &[],
    ));
    let run = c.coord("limited", &["owners", "cm/lim-owner", "-n", &ns]).ok();
    assert!(run.stdout.contains("└─ConfigMap") && run.stdout.contains("lim-dep"), "{}", run.stdout);
    assert!(run.stderr.contains("not listed, forbidden:") && run.stderr.contains("nodes"), "{}", run.stderr);
    assert!(run.stderr.contains("may be incomplete"), "{}", run.stderr);
    let json = c.coord("limited", &["owners", "cm/lim-owner", "-n", &ns, "-o", "json"]).ok().json();
    assert_eq!(json["complete"], false);
    let skipped = json["skipped"].as_array().unwrap();
    assert!(skipped.iter().any(|s| s["resource"] == "nodes" && s["reason"] == "forbidden"), "{skipped:?}");
    assert!(!skipped.iter().any(|s| s["resource"] == "namespaces"), "no other cluster-scoped type: {skipped:?}");
}

#[test]
fn bad_input_is_one_line_with_the_documented_code() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-owners-bad");
    for (args, code, needle) in [
        (vec!["owners"], 2, "no object given"),
        (vec!["owners", "deploy/"], 2, "the name is empty"),
        (vec!["owners", "nosuchtype/x"], 2, "does not serve a resource type \"nosuchtype\""),
        (vec!["owners", "--all", "deploy/x"], 2, "give no object with it"),
        (vec!["owners", "deploy/x", "--stuck-after", "soon"], 2, "invalid --stuck-after"),
        (vec!["owners", "--all", "--cascade", "orphan"], 2, "need an object"),
        (vec!["owners", "deploy/missing", "-n", ns.as_str()], 1, "deployments \"missing\" not found in namespace"),
    ] {
        let run = c.coord("viewer", &args).code(code);
        run.one_line_error(needle);
    }
}

/// Manifests before they are applied (owners -f): a ConfigMap naming the live Deployment by
/// its uid is fine; one naming an old uid of it and one naming a Deployment that does not
/// exist are predicted dangling. The real garbage collector is the oracle: after `kubectl
/// apply` of the same files it deletes exactly the two predicted, and keeps the first.
#[test]
fn manifests_dangling_references_are_what_the_garbage_collector_deletes() {
    let c = cluster();
    let ns = &c.fresh_namespace("coord-owners-files");
    deployment(&c, ns, "web", 1);
    let live = uid(&c, Some(ns), "deployment/web");
    let dir = std::env::temp_dir().join(format!("{ns}-files"));
    std::fs::create_dir_all(&dir).unwrap();
    let no_ns = |text: String| text.replace(&format!("  namespace: {ns}\n"), "");
    let manifests = [
        no_ns(configmap(ns, "kept", &[owner_ref("apps/v1", "Deployment", "web", &live, false, false)], &[])),
        no_ns(configmap(
            ns,
            "old-uid",
            &[owner_ref("apps/v1", "Deployment", "web", "00000000-0000-4000-8000-000000000001", false, false)],
            &[],
        )),
        no_ns(configmap(
            ns,
            "no-owner",
            &[owner_ref("apps/v1", "Deployment", "gone", "00000000-0000-4000-8000-000000000002", false, false)],
            &[],
        )),
    ];
    std::fs::write(dir.join("release.yaml"), manifests.join("---\n")).unwrap();
    let files = dir.to_str().unwrap();

    let run = c.kubectl_plugin("viewer", &["owners", "-n", ns, "-f", files, "--exit-code", "-o", "json"]).code(3);
    let report = run.json();
    let mut predicted: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["object"]["name"].as_str().unwrap().to_string(), f["kind"].as_str().unwrap().to_string()))
        .collect();
    predicted.sort();
    assert_eq!(
        predicted,
        [
            ("no-owner".to_string(), "dangling-reference".to_string()),
            ("old-uid".to_string(), "dangling-reference".to_string())
        ],
        "{report:#}"
    );
    let documents: Vec<u64> =
        report["files"].as_array().unwrap().iter().map(|f| f["document"].as_u64().unwrap()).collect();
    assert_eq!(documents, [1, 2, 3]);
    let text = c.kubectl_plugin("viewer", &["owners", "-n", ns, "-f", files]).ok().stdout;
    assert!(text.contains("exists with another uid") && text.contains("release.yaml#2"), "{text}");

    c.kubectl(&["apply", "-n", ns, "-f", files]).ok();
    let names = || -> BTreeSet<String> {
        c.kubectl(&["-n", ns, "get", "configmaps", "-o", "jsonpath={.items[*].metadata.name}"])
            .ok()
            .stdout
            .split_whitespace()
            .filter(|n| *n != "kube-root-ca.crt")
            .map(str::to_string)
            .collect()
    };
    wait_for("the garbage collector to delete the dangling dependents", 60, || names().len() == 1);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(names(), BTreeSet::from(["kept".to_string()]), "what the garbage collector left");
    std::fs::remove_dir_all(&dir).unwrap();
}
