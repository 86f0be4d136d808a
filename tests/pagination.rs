//! A paginated list whose continue token expires (410 Gone) in the middle restarts
//! from the first page and still returns the whole list. Real server, real expiry:
//! tests/run.sh serves continue pages from etcd (ListFromCacheSnapshot off), the
//! list walks 1-item pages through a slow loopback proxy, and etcd is compacted
//! (through its own JSON gateway) while the list is half way.

mod common;

use std::process::Command;
use std::time::Duration;

use common::cluster;
use common::proxy::Proxy;

const CONFIGMAPS: usize = 40;

fn etcd(c: &common::Cluster, call: &str, body: &str) -> serde_json::Value {
    let url = format!("http://127.0.0.1:{}/v3/kv/{call}", c.env("ETCD_PORT"));
    let out = Command::new("curl").args(["-sf", "-X", "POST", &url, "-d", body]).output().unwrap();
    assert!(out.status.success(), "etcd {call}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn an_expired_continue_token_restarts_the_list() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-pagination");
    let items: String = (0..CONFIGMAPS)
        .map(|i| format!("- {{apiVersion: v1, kind: ConfigMap, metadata: {{name: cm-{i:02}, namespace: {ns}}}}}\n"))
        .collect();
    c.apply(&format!("apiVersion: v1\nkind: List\nitems:\n{items}"));

    let proxy = Proxy::start(c.api_addr(), Duration::from_millis(40));
    let trace = c.dir.join(format!("{ns}-trace.txt"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
    cmd.args(["fields", "-n", &ns, "--kinds", "configmaps", "-o", "json"])
        .env("KUBECONFIG", c.kubeconfig_via(proxy.addr))
        .env("KUBECTL_COORD_PAGE_SIZE", "1")
        .env("KUBECTL_COORD_TRACE", &trace)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    // Once a few pages are in, compact etcd to now: every older continue token expires.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let pages =
            std::fs::read_to_string(&trace).unwrap_or_default().matches("/configmaps?limit=1&continue=").count();
        if pages >= 5 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the list never got going");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A write first, so that the revision compacted to is newer than the list's own.
    c.apply(&common::lease_yaml("default", "coord-pagination-bump", &ns, 30, Some(0), 0));
    let revision = etcd(&c, "range", r#"{"key":"Zm9v"}"#)["header"]["revision"].as_str().unwrap().to_string();
    etcd(&c, "compaction", &format!(r#"{{"revision":"{revision}","physical":true}}"#));
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let census: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    // Every ConfigMap, plus the namespace's kube-root-ca.crt: nothing lost, nothing twice.
    assert_eq!(census["objects"].as_u64().unwrap(), CONFIGMAPS as u64 + 1, "{stdout}");
    let requests = std::fs::read_to_string(&trace).unwrap();
    // Trace lines: method, Accept, path, protocol, bytes.
    let first_pages =
        requests.lines().filter(|l| l.split('\t').nth(2).is_some_and(|p| p.ends_with("/configmaps?limit=1"))).count();
    assert!(first_pages >= 2, "the list did not restart after the 410:\n{requests}");
}
