//! `kubectl coord version` against the real local control plane: the connection
//! path (kubeconfig merging, contexts, flags, impersonation, tokens) end to end.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{Run, cluster};

#[test]
fn version_with_each_kubeconfig_reports_server_and_user() {
    let c = cluster();
    let ns = c.limited_namespace();
    for (who, user, namespace) in [
        ("admin", "kubectl-coord-admin", "default"),
        ("viewer", "coord-viewer", "default"),
        ("limited", "coord-limited", ns.as_str()),
    ] {
        let run = c.coord(who, &["version", "-o", "json"]).ok();
        let v = run.json();
        assert_eq!(v["apiVersion"], "coord.kubectl.io/v1alpha1");
        assert_eq!(v["kind"], "VersionReport");
        assert_eq!(v["server"]["gitVersion"], "v1.36.3", "{who}");
        assert_eq!(v["connection"]["user"]["username"], user, "{who}");
        assert_eq!(v["connection"]["namespace"], namespace, "{who}");
        assert_eq!(v["connection"]["context"], format!("coord-{who}"));
        assert_eq!(v["connection"]["server"], c.env("SERVER"));
        assert!(run.stderr.is_empty(), "{who}: unexpected stderr {}", run.stderr);
    }
}

#[test]
fn version_table_and_yaml() {
    let c = cluster();
    let table = c.coord("admin", &["version"]).ok();
    assert!(table.stdout.contains("Server Version: v1.36.3"), "{}", table.stdout);
    assert!(table.stdout.contains("User:           kubectl-coord-admin"), "{}", table.stdout);
    assert!(table.stdout.contains("system:masters"));
    let wide = c.coord("admin", &["version", "-o", "wide"]).ok();
    assert!(wide.stdout.contains("Server Platform: linux/"), "{}", wide.stdout);
    let yaml = c.coord("admin", &["version", "-o", "yaml"]).ok();
    assert!(yaml.stdout.contains("kind: VersionReport"), "{}", yaml.stdout);
    assert!(yaml.stdout.contains("gitVersion: v1.36.3"), "{}", yaml.stdout);
}

#[test]
fn version_through_kubectl_plugin_discovery() {
    let c = cluster();
    let run = c.kubectl_plugin("viewer", &["version", "-o", "json"]).ok();
    assert_eq!(run.json()["connection"]["user"]["username"], "coord-viewer");
    let help = c.kubectl_plugin("viewer", &["--help"]).ok();
    assert!(help.stdout.contains("Usage: kubectl coord"), "{}", help.stdout);
}

#[test]
fn kubeconfig_list_merges_first_wins_and_skips_missing_files() {
    let c = cluster();
    let missing = c.dir.join("does-not-exist.kubeconfig");
    let list = std::env::join_paths([missing, c.kubeconfig("viewer"), c.kubeconfig("admin")]).unwrap();
    let list = list.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
        cmd.args(args).env("KUBECONFIG", list);
        common::Run::of(cmd).ok()
    };
    // The first file to set current-context wins.
    let v = run(&["version", "-o", "json"]).json();
    assert_eq!(v["connection"]["user"]["username"], "coord-viewer");
    // A context defined only in the second file is still reachable.
    let v = run(&["version", "-o", "json", "--context", "coord-admin"]).json();
    assert_eq!(v["connection"]["user"]["username"], "kubectl-coord-admin");
    // --user picks a user of the merged config under the current context.
    let v = run(&[
        "version",
        "-o",
        "json",
        "--user",
        "coord-limited",
        "--kubeconfig",
        c.kubeconfig("limited").to_str().unwrap(),
    ])
    .json();
    assert_eq!(v["connection"]["user"]["username"], "coord-limited");
}

#[test]
fn impersonation_flags() {
    let c = cluster();
    let v = c
        .coord("admin", &["version", "-o", "json", "--as", "jane", "--as-group", "team-a", "--as-group", "team-b"])
        .ok()
        .json();
    let user = &v["connection"]["user"];
    assert_eq!(user["username"], "jane");
    let groups: Vec<&str> = user["groups"].as_array().unwrap().iter().map(|g| g.as_str().unwrap()).collect();
    assert!(groups.contains(&"team-a") && groups.contains(&"team-b"), "{groups:?}");
    // The viewer may not impersonate: the server refuses, and that is a cluster error (exit 1).
    let denied = c.coord("viewer", &["version", "--as", "jane"]).code(1);
    denied.one_line_error("impersonate");
}

#[test]
fn server_token_and_ca_flags_without_any_kubeconfig() {
    let c = cluster();
    let ns = "coord-token-test";
    let _ = c.kubectl(&["create", "namespace", ns]);
    let _ = c.kubectl(&["-n", ns, "create", "serviceaccount", "probe"]);
    let token = c.kubectl(&["-n", ns, "create", "token", "probe", "--duration", "10m"]).ok().stdout.trim().to_string();
    let server = c.env("SERVER");
    let ca = c.dir.join("pki/ca.crt");
    let v = c
        .coord_bare(&[
            "version",
            "-o",
            "json",
            "--server",
            &server,
            "--token",
            &token,
            "--certificate-authority",
            ca.to_str().unwrap(),
            "-n",
            ns,
        ])
        .ok()
        .json();
    assert_eq!(v["connection"]["user"]["username"], format!("system:serviceaccount:{ns}:probe"));
    assert_eq!(v["connection"]["namespace"], ns);
    assert!(v["connection"]["context"].is_null());
    // Without the CA the server's certificate is untrusted...
    let untrusted = c.coord_bare(&["version", "--server", &server, "--token", &token]).code(1);
    untrusted.one_line_error(&server);
    assert!(!untrusted.stderr.contains(&token), "token echoed: {}", untrusted.stderr);
    // ...unless the user says so.
    let v = c
        .coord_bare(&["version", "-o", "json", "--server", &server, "--token", &token, "--insecure-skip-tls-verify"])
        .ok()
        .json();
    assert_eq!(v["connection"]["user"]["username"], format!("system:serviceaccount:{ns}:probe"));
    // --server and --token also override a kubeconfig's own cluster and user.
    let v = c.coord("admin", &["version", "-o", "json", "--token", &token]).ok().json();
    assert_eq!(v["connection"]["user"]["username"], format!("system:serviceaccount:{ns}:probe"));
}

#[test]
fn bad_global_input_gets_one_line_and_exit_2() {
    let c = cluster();
    let broken = c.broken_kubeconfig();
    let no_cert = c.kubeconfig_missing_cert("admin");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["version", "--kubeconfig", "/nonexistent/kubeconfig"],
            "kubeconfig /nonexistent/kubeconfig: no such file",
        ),
        (vec!["version", "--context", "nope"], "context \"nope\" not found in kubeconfig"),
        (vec!["version", "--cluster", "nope"], "cluster \"nope\" not found in kubeconfig"),
        (vec!["version", "--request-timeout", "5x"], "invalid --request-timeout \"5x\""),
        (vec!["version", "--request-timeout=-1s"], "invalid --request-timeout"),
        (vec!["version", "--kubeconfig", broken.to_str().unwrap()], "broken.kubeconfig"),
        (vec!["version", "--kubeconfig", no_cert.to_str().unwrap()], "gone.crt"),
        (vec!["version", "--server", "not a url"], "invalid --server"),
        (
            vec!["version", "--certificate-authority", "/nonexistent/ca.crt"],
            "--certificate-authority /nonexistent/ca.crt: no such file",
        ),
    ];
    for (args, needle) in cases {
        let run = c.coord("admin", &args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        run.one_line_error(needle);
    }
    // clap's own usage errors (bad -o value, unknown flag) are exit 2 too.
    for (args, needle) in [
        (vec!["version", "-o", "xml"], "invalid value 'xml' for '--output <OUTPUT>'"),
        (vec!["version", "--bogus"], "unexpected argument '--bogus'"),
        (vec!["frobnicate"], "unrecognized subcommand 'frobnicate'"),
    ] {
        let run = c.coord("admin", &args).code(2);
        run.one_line_error(needle);
    }
    // An argument that is not UTF-8 (a shell can pass any bytes): a usage error, not a panic,
    // and for the completion entry point an empty answer.
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bad = std::ffi::OsStr::from_bytes(b"\xff");
        let run = Run::of({
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
            cmd.arg(bad);
            cmd
        });
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
        let run = Run::of({
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
            cmd.arg("__complete").arg(bad);
            cmd
        })
        .ok();
        assert_eq!(run.stdout.lines().last(), Some(":4"), "{}", run.stdout);
    }
}

#[test]
fn unreachable_and_black_holed_servers_fail_within_the_timeout() {
    let c = cluster();
    // Nothing listens on a port we just released: refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = format!("https://127.0.0.1:{port}");
    let run = c.coord("admin", &["version", "--server", &server, "--token", "s3cr3t-token-value"]).code(1);
    run.one_line_error(&format!("cannot reach the API server at {server}"));
    assert!(!run.stderr.contains("s3cr3t-token-value"));

    // A server that accepts connections and never answers.
    let hole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = format!("https://127.0.0.1:{}", hole.local_addr().unwrap().port());
    let started = Instant::now();
    let run = c.coord("admin", &["version", "--server", &server, "--request-timeout", "2s"]).code(1);
    let took = started.elapsed();
    run.one_line_error(&server);
    assert!(took < Duration::from_secs(8), "took {took:?}");
    drop(hole);
}

#[test]
fn client_only_version_and_completions_need_no_cluster() {
    let c = cluster();
    let v = c.coord_bare(&["version", "--client", "-o", "json"]).ok().json();
    assert_eq!(v["client"]["version"], env!("CARGO_PKG_VERSION"));
    // The commit and target triple it was built from and for.
    let head = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().unwrap();
    assert_eq!(v["client"]["gitCommit"], String::from_utf8(head.stdout).unwrap().trim());
    let rustc = Command::new("rustc").arg("-vV").output().unwrap();
    let host = String::from_utf8(rustc.stdout).unwrap();
    let host = host.lines().find_map(|l| l.strip_prefix("host: ")).unwrap().to_string();
    assert_eq!(v["client"]["target"], host);
    let text = c.coord_bare(&["version", "--client"]).ok().stdout;
    let line = text.lines().find(|l| l.starts_with("Client Target:")).unwrap_or_default();
    assert_eq!(line.split_whitespace().last(), Some(host.as_str()), "{text}");
    assert!(v.get("server").is_none());
    // As kubectl does: with no kubeconfig at all, or a server that does not answer, `version`
    // still says what the client is, then why the server could not be asked (one line on
    // stderr, the documented exit code).
    let bare = c.coord_bare(&["version"]).code(2);
    assert!(bare.stdout.starts_with("Client Version:"), "{}", bare.stdout);
    assert!(bare.stdout.contains(&format!("Client Target:  {host}")), "{}", bare.stdout);
    bare.one_line_error("no kubeconfig");
    let json = c.coord_bare(&["version", "-o", "json"]).code(2).json();
    assert_eq!(json["client"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(json.get("server").is_none() && json.get("connection").is_none(), "{json}");
    let gone = c.coord_bare(&["version", "--server", "https://127.0.0.1:9", "--request-timeout", "5s"]).code(1);
    assert!(gone.stdout.starts_with("Client Version:"), "{}", gone.stdout);
    gone.one_line_error("127.0.0.1:9");
    for shell in ["bash", "zsh", "fish"] {
        let run = c.coord_bare(&["completion", shell]).ok();
        assert!(run.stdout.contains("kubectl-coord"), "{shell}: {}", run.stdout);
        assert!(run.stdout.contains("request-timeout"), "{shell} script lacks the global flags");
    }
}

/// The process turns transparent huge pages off before its first allocation: an exec
/// credential plugin (run by the command, so while it is alive) reads the plugin's parent's
/// memory map. Set from `main`, the flag came after mimalloc had asked for huge pages on its
/// arena and the runtime had faulted two of them in (AnonHugePages 4096 kB) on a host whose
/// THP setting is "madvise" or "always"; under "never" there are none to find, and only the
/// process's flag (THP_enabled) is checked.
#[test]
fn no_transparent_huge_pages_from_the_first_allocation() {
    let c = cluster();
    let out = c.dir.join(format!("thp-{}.txt", std::process::id()));
    let plugin = c.dir.join(format!("thp-{}.sh", std::process::id()));
    std::fs::write(
        &plugin,
        format!(
            "#!/bin/sh\ngrep -h -e AnonHugePages -e THP_enabled /proc/$PPID/smaps_rollup /proc/$PPID/status >> {}\n\
             echo '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"t\"}}}}'\n",
            out.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&plugin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let kubeconfig = c.dir.join(format!("thp-{}.kubeconfig", std::process::id()));
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
             clusters: [{{name: c, cluster: {{server: \"{}\", certificate-authority: \"{}\"}}}}]\n\
             users: [{{name: u, user: {{exec: {{apiVersion: client.authentication.k8s.io/v1, command: \"{}\", interactiveMode: Never}}}}}}]\n\
             contexts: [{{name: c, context: {{cluster: c, user: u}}}}]\n",
            c.env("SERVER"),
            c.dir.join("pki/ca.crt").display(),
            plugin.display()
        ),
    )
    .unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
    cmd.args(["leases"]).env("KUBECONFIG", &kubeconfig);
    // The token is refused (401); the plugin has run by then.
    common::Run::of(cmd).code(1);
    let seen = std::fs::read_to_string(&out).expect("the credential plugin ran");
    let host = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    assert!(seen.lines().any(|l| l.starts_with("THP_enabled:")), "{seen}");
    for line in seen.lines() {
        let ok = match line.split_once(':') {
            Some(("THP_enabled", v)) => v.trim() == "0",
            Some(("AnonHugePages", v)) => v.trim() == "0 kB",
            _ => true,
        };
        assert!(ok, "huge pages in kubectl-coord (host THP: {}): {seen}", host.trim());
    }
}
