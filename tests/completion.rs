//! `kubectl coord <TAB>`: real kubectl's `__complete` finds kubectl_complete-coord on PATH
//! and relays its candidates: subcommands and flags from the clap definition, namespaces,
//! resource types and object names from the live cluster; silent and quick when the
//! cluster cannot be reached.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Cluster, Run, cluster, wait_for};

/// `kubectl __complete coord ARGS...` as `who`, with both plugin executables on PATH.
fn complete(c: &Cluster, kubeconfig: &Path, args: &[&str]) -> (Vec<String>, String) {
    let plugin_dir = Path::new(env!("CARGO_BIN_EXE_kubectl_complete-coord")).parent().unwrap().to_path_buf();
    let mut cmd = Command::new(c.bin().join("kubectl"));
    cmd.arg("__complete")
        .arg("coord")
        .args(args)
        .env("PATH", format!("{}:{}:/usr/bin:/bin", plugin_dir.display(), c.bin().display()))
        .env("KUBECONFIG", kubeconfig);
    let run = Run::of(cmd).ok();
    let mut lines: Vec<String> = run.stdout.lines().map(str::to_string).collect();
    let directive = lines.pop().unwrap_or_default();
    (lines.into_iter().map(|l| l.split('\t').next().unwrap_or_default().to_string()).collect(), directive)
}

#[test]
fn kubectl_completes_commands_flags_and_live_objects() {
    let c = cluster();
    let viewer = c.kubeconfig("viewer");
    let (subcommands, directive) = complete(&c, &viewer, &[""]);
    for s in ["version", "leases", "owners", "overlaps", "fields", "trace"] {
        assert!(subcommands.iter().any(|x| x == s), "{s} missing from {subcommands:?}");
    }
    assert_eq!(directive, ":4", "no file completion for subcommands");
    assert_eq!(complete(&c, &viewer, &["tr"]).0, vec!["trace".to_string()]);
    assert!(complete(&c, &viewer, &["trace", "--st"]).0.contains(&"--stall-after".to_string()));
    assert_eq!(complete(&c, &viewer, &["leases", "-o", "ya"]).0, vec!["yaml".to_string()]);

    let namespaces = complete(&c, &viewer, &["leases", "-n", "kube-"]).0;
    assert!(namespaces.contains(&"kube-system".to_string()) && namespaces.contains(&"kube-node-lease".to_string()));
    let leases = complete(&c, &viewer, &["leases", "-n", "kube-system", "kube-s"]).0;
    assert_eq!(leases, vec!["kube-scheduler".to_string()]);

    let ns = c.fresh_namespace("complete");
    c.apply(&format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings-a, namespace: {ns}}}\n"));
    c.apply(&format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings-b, namespace: {ns}}}\n"));
    let (types, directive) = complete(&c, &viewer, &["owners", "-n", &ns, "configm"]);
    assert_eq!(types, vec!["configmaps/".to_string()]);
    assert_eq!(directive, ":6", "a type is followed by its name: no space after the slash");
    wait_for("both ConfigMaps listed", 30, || {
        complete(&c, &viewer, &["trace", "-n", &ns, "configmaps/set"]).0.len() == 2
    });
    let names = complete(&c, &viewer, &["trace", "-n", &ns, "configmaps/settings-"]).0;
    assert_eq!(names, vec!["configmaps/settings-a".to_string(), "configmaps/settings-b".to_string()]);

    // An unreachable cluster: nothing, no error, well within the request timeout.
    let dead = c.kubeconfig_via("127.0.0.1:1".parse().unwrap());
    let started = Instant::now();
    let (none, directive) = complete(&c, &dead, &["owners", "-n", ""]);
    assert!(none.is_empty() && directive == ":4", "{none:?} {directive}");
    assert!(started.elapsed() < Duration::from_secs(8));
}
