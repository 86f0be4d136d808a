//! The FieldsV1 decoder on managedFields written by the real API server:
//! server-side apply by a named manager, `kubectl scale` through the scale
//! subresource, and the real Deployment controller writing status.

mod common;

use std::time::{Duration, Instant};

use kubectl_coord::analyze::fieldsv1::decode;

#[test]
fn decodes_what_the_server_records() {
    let c = common::cluster();
    let ns = &c.fresh_namespace("coord-fields");
    let manifest = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: {ns}, labels: {{app.kubernetes.io/name: web}}}}\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers:\n      - name: web\n        image: registry.k8s.io/pause:3.10\n        ports: [{{containerPort: 80, protocol: TCP}}]\n"
    );
    let path = c.dir.join(format!("{ns}.yaml"));
    std::fs::write(&path, manifest).unwrap();
    c.kubectl(&["apply", "--server-side", "--field-manager=gitops", "-f", path.to_str().unwrap()]).ok();
    c.kubectl(&["-n", ns, "scale", "deployment", "web", "--replicas=3"]).ok();
    let deadline = Instant::now() + Duration::from_secs(60);
    let object = loop {
        let o = c.kubectl(&["-n", ns, "get", "deployment", "web", "-o", "json", "--show-managed-fields"]).ok().json();
        let managers: Vec<String> = o["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["manager"].as_str().unwrap().to_string())
            .collect();
        if managers.iter().any(|m| m == "kube-controller-manager") {
            break o;
        }
        assert!(Instant::now() < deadline, "the Deployment controller never wrote status: {managers:?}");
        std::thread::sleep(Duration::from_millis(300));
    };
    let entries = object["metadata"]["managedFields"].as_array().unwrap();
    let owned = |manager: &str, subresource: &str| -> Vec<String> {
        let e = entries
            .iter()
            .find(|e| e["manager"] == manager && e["subresource"].as_str().unwrap_or("") == subresource)
            .unwrap_or_else(|| panic!("no {manager}/{subresource} entry in {entries:#?}"));
        decode(&e["fieldsV1"]).unwrap().iter().map(|p| p.to_string()).collect()
    };
    let gitops = owned("gitops", "");
    for want in [
        ".spec.template.spec.containers[name=web].image",
        ".spec.template.spec.containers[name=web].ports[containerPort=80,protocol=TCP]",
        ".metadata.labels[\"app.kubernetes.io/name\"]",
        ".spec.selector",
    ] {
        assert!(gitops.contains(&want.to_string()), "{want} not in {gitops:#?}");
    }
    // kubectl scale goes through the scale subresource and takes spec.replicas away from gitops.
    let scale = owned("kubectl", "scale");
    assert_eq!(scale, vec![".spec.replicas"]);
    assert!(!gitops.contains(&".spec.replicas".to_string()));
    let status = owned("kube-controller-manager", "status");
    assert!(status.iter().all(|p| p.starts_with(".status") || p.starts_with(".metadata.annotations")), "{status:#?}");
    assert!(status.iter().any(|p| p.starts_with(".status.conditions[type=")), "{status:#?}");
    // Every path of every entry maps back to a live value.
    for e in entries {
        for p in decode(&e["fieldsV1"]).unwrap() {
            assert!(p.lookup(&object).is_some_and(|v| !v.is_null()), "{p} has no live value");
        }
    }
}
