//! Objects the tool meets in the wild, made for real on the local control plane:
//! hundreds of managedFields entries, an ownerReference to a kind the server does
//! not serve, and labels at the maximum key and value length.

mod common;

use std::process::Command;

use common::cluster;

#[test]
fn hundreds_of_field_managers() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-wild-managers");
    let server = c.env("SERVER");
    let pki = c.dir.join("pki");
    // 150 server-side applies by 150 managers, each owning one annotation. One after
    // another: concurrent writers to one object make the server's conflict retries pile
    // up into 504s. The server caps Update entries ("ancient-changes"), not Apply ones.
    let script = format!(
        r#"set -e
for i in $(seq 1 150); do
  curl -sSf -o /dev/null --cacert {pki}/ca.crt --cert {pki}/admin.crt --key {pki}/admin.key \
    -X PATCH -H 'Content-Type: application/apply-patch+yaml' \
    "{server}/api/v1/namespaces/{ns}/configmaps/crowded?fieldManager=team-$i&force=true" \
    --data '{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"crowded","annotations":{{"owner-'$i'":"team-'$i'"}}}}}}'
done"#,
        pki = pki.display()
    );
    let out = Command::new("bash").args(["-c", &script]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = c.coord("viewer", &["fields", "cm/crowded", "-n", &ns, "-o", "json"]).ok().json();
    let managers = report["objects"][0]["managers"].as_array().unwrap();
    assert_eq!(managers.len(), 150, "one entry per manager");
    let fields = report["objects"][0]["fields"].as_array().unwrap();
    let owner = fields.iter().find(|f| f["path"] == ".metadata.annotations.owner-137").unwrap();
    assert_eq!(owner["owners"][0]["manager"], "team-137");
    let table = c.coord("viewer", &["fields", "cm/crowded", "-n", &ns, "--by-manager"]).ok().stdout;
    assert_eq!(table.lines().filter(|l| l.starts_with("team-")).count(), 150);
    let census = c.coord("viewer", &["fields", "-n", &ns, "--kinds", "configmaps", "-o", "json"]).ok().json();
    let listed = census["managers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["manager"].as_str().is_some_and(|n| n.starts_with("team-")));
    assert_eq!(listed.count(), 150, "{census}");
}

#[test]
fn an_owner_kind_the_server_does_not_serve() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-wild-unserved");
    c.apply(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leftover\n  namespace: {ns}\n  ownerReferences:\n  - {{apiVersion: retired.coord.test/v1, kind: Gadget, name: g, uid: 6b1f0c2e-0000-4000-8000-000000000001}}\n"
    ));
    let run = c.coord("viewer", &["owners", "cm/leftover", "-n", &ns, "-o", "json", "--exit-code"]).code(3);
    let report = run.json();
    let finding = &report["findings"][0];
    assert_eq!(finding["kind"], "owner-kind-not-served");
    assert!(finding["message"].as_str().unwrap().contains("Gadget (retired.coord.test/v1)"), "{finding}");
    // The garbage collector cannot resolve the reference either: it keeps the object.
    std::thread::sleep(std::time::Duration::from_secs(5));
    c.kubectl(&["-n", &ns, "get", "cm", "leftover"]).ok();
}

#[test]
fn labels_at_the_maximum_length() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-wild-labels");
    // A 253-character DNS-subdomain prefix, a 63-character name and a 63-character value.
    let prefix = format!("{}.{}.{}.{}", "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61));
    let key = format!("{prefix}/{}", "n".repeat(63));
    let value = "v".repeat(63);
    assert_eq!((prefix.len(), value.len()), (253, 63));
    for (name, selector) in [
        ("long-a", format!("matchLabels: {{\"{key}\": \"{value}\"}}")),
        ("long-b", format!("matchExpressions: [{{key: \"{key}\", operator: Exists}}]")),
    ] {
        c.apply(&format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  replicas: 0\n  selector: {{{selector}}}\n  template:\n    metadata: {{labels: {{\"{key}\": \"{value}\"}}}}\n    spec: {{containers: [{{name: c, image: registry.k8s.io/pause:3.10}}]}}\n"
        ));
    }
    let overlaps = c.coord("viewer", &["overlaps", "-n", &ns, "-o", "json"]).ok().json();
    let text = overlaps.to_string();
    assert!(text.contains(&key) && text.contains("long-a") && text.contains("long-b"), "{text}");
    let selector = format!("{key}={value}");
    c.coord("viewer", &["overlaps", "-n", &ns, "-l", &selector]).ok();
    let fields = c.coord("viewer", &["fields", "deploy/long-a", "-n", &ns]).ok().stdout;
    // spec.selector is atomic for server-side apply; the template's labels are per key.
    assert!(fields.contains(&format!(".spec.template.metadata.labels[\"{key}\"]")), "{fields}");
    c.coord("viewer", &["owners", "deploy/long-a", "-n", &ns]).ok();
}
