//! Read-only, proven by the server: after the whole integration suite has run,
//! every request the API server audited from kubectl-coord (matched on its
//! User-Agent) is a get, list or watch, a create of a review object that
//! answers a question and persists nothing, or a patch as a dry run (`dryRun=All`, check
//! -f --server-dry-run), which persists nothing either. Run by tests/run.sh after the suite.

mod common;

use std::collections::BTreeMap;

const QUESTIONS: &[&str] = &["selfsubjectreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews"];

#[test]
fn the_plugin_never_wrote_to_the_cluster() {
    // The audit backend writes in batches of at most 1s.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let c = common::cluster();
    check_audit_log(&c.dir.join("audit.log"), 10, 3);
    // The second control plane, which only the fleet tests read.
    let second = std::env::var_os("COORD_TEST_CLUSTER_2").expect("COORD_TEST_CLUSTER_2 (tests/run.sh starts it)");
    check_audit_log(&std::path::Path::new(&second).join("audit.log"), 10, 1);
    // The third, with real operators (tests/operators.rs).
    let third = std::env::var_os("COORD_TEST_CLUSTER_3").expect("COORD_TEST_CLUSTER_3 (tests/run.sh starts it)");
    check_audit_log(&std::path::Path::new(&third).join("audit.log"), 10, 1);
}

fn check_audit_log(path: &std::path::Path, min_requests: usize, min_users: usize) {
    let log = std::fs::read_to_string(path).expect("audit.log");
    let mut verbs: BTreeMap<String, usize> = BTreeMap::new();
    let mut users: BTreeMap<String, usize> = BTreeMap::new();
    let mut writes = Vec::new();
    for line in log.lines() {
        let event: serde_json::Value = serde_json::from_str(line).expect("audit lines are JSON");
        let agent = event["userAgent"].as_str().unwrap_or_default();
        if !agent.starts_with("kubectl-coord/") {
            continue;
        }
        let verb = event["verb"].as_str().unwrap_or_default().to_string();
        let resource = event["objectRef"]["resource"].as_str().unwrap_or_default();
        *verbs.entry(verb.clone()).or_default() += 1;
        *users.entry(event["user"]["username"].as_str().unwrap_or_default().to_string()).or_default() += 1;
        let read = matches!(verb.as_str(), "get" | "list" | "watch");
        let question = verb == "create" && QUESTIONS.contains(&resource);
        let uri = event["requestURI"].as_str().unwrap_or_default();
        let dry_run = verb == "patch" && uri.split(['?', '&']).any(|p| p == "dryRun=All");
        if !read && !question && !dry_run {
            writes.push(format!("{verb} {}", event["requestURI"].as_str().unwrap_or_default()));
        }
    }
    eprintln!("kubectl-coord requests audited, by verb: {verbs:?}; by user: {users:?}");
    assert!(verbs.values().sum::<usize>() >= min_requests, "too few kubectl-coord requests audited: {verbs:?}");
    assert!(users.len() >= min_users, "expected requests from several identities, got {users:?}");
    assert!(writes.is_empty(), "kubectl-coord wrote to the cluster: {writes:#?}");
}
