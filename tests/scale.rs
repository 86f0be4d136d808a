//! A namespace with tens of thousands of pods, on the local control plane: every
//! command reads all of it (paginated, metadata-only where it can) and gets the
//! counts right. The pods are written by tests/cluster's loader with no owner, so the
//! real ReplicaSet controller running beside this test has nothing to do with them.

mod common;

use std::process::Command;

use common::cluster;

const PODS: usize = 20_000;
const LEASES: usize = 300;

#[test]
fn twenty_thousand_pods() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-scale");
    let pods = PODS.to_string();
    let leases = LEASES.to_string();
    let load = Command::new(c.bin().join("coord-bench-loader"))
        .args(["-kubeconfig", c.kubeconfig("admin").to_str().unwrap(), "-namespace", &ns])
        .args(["-deployments", "0", "-pdbs", "0", "-widgets", "0"])
        // Node-style leases renewed an hour ago, with no Node: more than one GET each is worth.
        .args(["-node-leases", "30", "-node-lease-age", "1h"])
        .args(["-leases", &leases, "-bare-pods", &pods])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&load.stdout);
    assert!(load.status.success(), "loader: {}{report}", String::from_utf8_lossy(&load.stderr));
    let created = report.lines().find(|l| l.starts_with("BarePod")).and_then(|l| l.split_whitespace().nth(2));
    assert_eq!(created, Some(pods.as_str()), "{report}");
    // Pods are labelled app=app-000NN (i % 100) and tier by NN % 3: a budget over app-00000
    // and one over tier=web both cover the 200 pods of app-00000.
    for (name, selector) in [("one-app", "{app: app-00000}"), ("web-tier", "{tier: web}")] {
        c.apply(&format!(
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: {name}, namespace: {ns}}}\nspec: {{minAvailable: 1, selector: {{matchLabels: {selector}}}}}\n"
        ));
    }

    let scan = c.coord("viewer", &["owners", "--all", "-n", &ns, "-o", "json"]).ok().json();
    assert!(scan["objects"].as_u64().unwrap() >= (PODS + LEASES) as u64, "{}", scan["objects"]);
    let here: Vec<_> =
        scan["findings"].as_array().unwrap().iter().filter(|f| f["object"]["namespace"] == ns.as_str()).collect();
    assert!(here.is_empty(), "{here:?}");

    let overlaps = c.coord("viewer", &["overlaps", "-n", &ns, "-o", "json"]).ok().json();
    let conflicts = overlaps["pdbConflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 200, "the pods of app-00000 are under both budgets");
    assert!(conflicts.iter().all(|p| p["pod"].as_str().unwrap().starts_with("bare-")));

    let census = c.coord("viewer", &["fields", "-n", &ns, "--kinds", "pods", "-o", "json"]).ok().json();
    assert_eq!(census["objects"].as_u64().unwrap(), PODS as u64);
    let loader = census["managers"].as_array().unwrap().iter().find(|m| m["manager"] == "coord-bench-loader").unwrap();
    assert_eq!(loader["objects"].as_u64().unwrap(), PODS as u64);

    let listed = c.coord("viewer", &["leases", "-n", &ns, "-o", "json"]).ok().json();
    assert_eq!(listed["leases"].as_array().unwrap().len(), LEASES);
    // More than 20 expired node leases: their Nodes are looked up with one list, not a GET each.
    let trace = c.dir.join(format!("{ns}-trace.txt"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
    cmd.args(["leases", "-n", "kube-node-lease", "-o", "json"])
        .env("KUBECONFIG", c.kubeconfig("viewer"))
        .env("KUBECTL_COORD_TRACE", &trace);
    let nodes = common::Run::of(cmd).ok().json();
    let gone: Vec<_> = nodes["nodeLeases"]["expired"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"].as_str().unwrap().starts_with("bench-node-"))
        .collect();
    assert_eq!(gone.len(), 30, "{}", nodes["nodeLeases"]);
    assert!(gone.iter().all(|e| e["nodeExists"] == false), "{gone:?}");
    let requests = std::fs::read_to_string(&trace).unwrap();
    assert!(requests.contains("/api/v1/nodes?limit="), "{requests}");
    assert!(!requests.contains("/api/v1/nodes/bench-node-"), "{requests}");
    // kube-node-lease is shared with the lease tests, which count what is in it.
    let names: Vec<String> = (0..30).map(|i| format!("bench-node-{i:05}")).collect();
    let mut delete = vec!["-n", "kube-node-lease", "delete", "lease"];
    delete.extend(names.iter().map(String::as_str));
    c.kubectl(&delete).ok();
}
