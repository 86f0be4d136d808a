//! A cluster that serves many more types than the built-in sixty: CRD_COUNT namespaced
//! CRDs (tests/cluster/crds.sh, thirty groups of ten), as a few CRD-heavy operators bring.
//! `owners` and `check` must list every one of them and answer completely, as a user the
//! default API Priority and Fairness configuration does not exempt (viewer: the
//! global-default priority level), without a single 429 from the real API server.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::{Cluster, cluster2, wait_for};

const CRD_COUNT: usize = 300;

/// Runs the plugin as viewer with its request trace written to `trace`.
fn traced(c: &Cluster, trace: &Path, args: &[&str]) -> common::Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
    cmd.args(args).env("KUBECONFIG", c.kubeconfig("viewer")).env("KUBECTL_COORD_TRACE", trace);
    common::Run::of(cmd)
}

/// (path, status) of every traced request.
fn requests(trace: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[2].to_string(), f.last().unwrap().to_string())
        })
        .collect()
}

fn uid(c: &Cluster, ns: &str, what: &str) -> String {
    c.kubectl(&["-n", ns, "get", what, "-o", "jsonpath={.metadata.uid}"]).ok().stdout
}

#[test]
fn owners_and_check_read_every_type_of_a_crd_heavy_cluster() {
    let c = cluster2();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cluster/crds.sh");
    let crds = Command::new("bash").arg(script).arg(CRD_COUNT.to_string()).output().unwrap();
    assert!(crds.status.success());
    c.apply(&String::from_utf8(crds.stdout).unwrap());
    c.kubectl(&["wait", "--for=condition=Established", "crd", "--all", "--timeout=180s"]).ok();

    // A chain across the first and the last CRD: ConfigMap root -> Kind09 (group g29) -> Kind00 (g00).
    let ns = c.fresh_namespace("coord-many-types");
    c.apply(&format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: root, namespace: {ns}}}\n"));
    let root = uid(&c, &ns, "cm/root");
    let last = format!("g{:02}.crds.coord.test", (CRD_COUNT - 1) / 10);
    let middle = format!(
        "apiVersion: {last}/v1\nkind: Kind09\nmetadata:\n  name: middle\n  namespace: {ns}\n  ownerReferences: \
         [{{apiVersion: v1, kind: ConfigMap, name: root, uid: \"{root}\"}}]\n"
    );
    // Discovery may lag the Established condition by a moment: retry the create.
    let path = c.dir.join(format!("{ns}-middle.yaml"));
    std::fs::write(&path, middle).unwrap();
    wait_for("the last CRD's kind in discovery", 60, || c.kubectl(&["apply", "-f", path.to_str().unwrap()]).code == 0);
    let middle_uid = uid(&c, &ns, &format!("kind09s.{last}/middle"));
    c.apply(&format!(
        "apiVersion: g00.crds.coord.test/v1\nkind: Kind00\nmetadata:\n  name: leaf\n  namespace: {ns}\n  ownerReferences: \
         [{{apiVersion: {last}/v1, kind: Kind09, name: middle, uid: \"{middle_uid}\"}}]\n"
    ));

    let trace = c.dir.join(format!("{ns}-owners-trace.txt"));
    let run = traced(&c, &trace, &["owners", "cm/root", "-n", &ns, "-o", "json"]).ok();
    let report = run.json();
    assert_eq!(report["complete"], true, "{}", run.stderr);
    let nodes: BTreeSet<(String, String)> = report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["kind"].as_str().unwrap().to_string(), n["name"].as_str().unwrap().to_string()))
        .collect();
    let want: BTreeSet<(String, String)> =
        [("ConfigMap", "root"), ("Kind09", "middle"), ("Kind00", "leaf")].map(|(k, n)| (k.into(), n.into())).into();
    assert_eq!(nodes, want);
    let sent = requests(&trace);
    // Every CRD listed in the namespace, once, and nothing throttled.
    for i in 0..CRD_COUNT {
        let collection = format!("/apis/g{:02}.crds.coord.test/v1/namespaces/{ns}/kind{:02}s?", i / 10, i % 10);
        let lists = sent.iter().filter(|(p, _)| p.starts_with(&collection)).count();
        assert_eq!(lists, 1, "{collection}");
    }
    let throttled: Vec<_> = sent.iter().filter(|(_, status)| status == "429").collect();
    assert!(throttled.is_empty(), "{throttled:?}");
    assert!(sent.iter().all(|(_, status)| status == "200"), "{sent:?}");
    // A namespaced root's dependents are all in its namespace: no cluster-scoped list.
    assert!(!sent.iter().any(|(p, _)| p.starts_with("/apis/rbac.authorization.k8s.io/v1/clusterroles")), "{sent:?}");

    let trace = c.dir.join(format!("{ns}-check-trace.txt"));
    let run = traced(&c, &trace, &["check", "-A", "-o", "json"]);
    let report = run.json();
    assert_eq!(report["complete"], true, "{}", run.stderr);
    assert_eq!(report["skipped"].as_array().unwrap().len(), 0, "{}", run.stderr);
    let sent = requests(&trace);
    let throttled: Vec<_> = sent.iter().filter(|(_, status)| status == "429").collect();
    assert!(throttled.is_empty(), "{throttled:?}");
    for i in 0..CRD_COUNT {
        let collection = format!("/apis/g{:02}.crds.coord.test/v1/kind{:02}s?", i / 10, i % 10);
        assert!(sent.iter().any(|(p, _)| p.starts_with(&collection)), "check -A did not list {collection}");
    }
}
