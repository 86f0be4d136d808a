//! Hostile and malformed input, for every command: each case ends in exactly one
//! stderr line starting "error: " with the documented exit code (2: bad input the
//! user can fix without the cluster; 1: the cluster said no or could not be reached),
//! never a panic or a backtrace, and a token given on the command line never appears
//! in any output.

mod common;

use common::cluster;

/// One invocation of each command that reads from the cluster.
const COMMANDS: &[&[&str]] = &[
    &["version"],
    &["leases"],
    &["overlaps"],
    &["fields"],
    &["fields", "deploy/x"],
    &["owners", "--all"],
    &["owners", "deploy/x"],
    &["trace", "deploy/x"],
];

#[test]
fn bad_connection_input_is_exit_2_for_every_command() {
    let c = cluster();
    let broken = c.broken_kubeconfig();
    let no_cert = c.kubeconfig_missing_cert("viewer");
    let directory = c.dir.join("pki");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--kubeconfig", "/nonexistent/kubeconfig"], "kubeconfig /nonexistent/kubeconfig: no such file"),
        (vec!["--kubeconfig", broken.to_str().unwrap()], "broken.kubeconfig"),
        (vec!["--kubeconfig", directory.to_str().unwrap()], "pki"),
        (vec!["--kubeconfig", no_cert.to_str().unwrap()], "gone.crt"),
        (vec!["--context", "nope"], "context \"nope\" not found in kubeconfig"),
        (vec!["--user", "nope"], "user \"nope\" not found in kubeconfig"),
        (vec!["-o", "xml"], "invalid value 'xml' for '--output <OUTPUT>'"),
        (vec!["--request-timeout", "soon"], "invalid --request-timeout \"soon\""),
    ];
    for command in COMMANDS {
        for (flags, needle) in &cases {
            let mut args: Vec<&str> = command.to_vec();
            args.extend(flags);
            let run = c.coord("viewer", &args);
            assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
            run.one_line_error(needle);
        }
    }
}

#[test]
fn a_namespace_that_does_not_exist_is_an_error_not_an_empty_answer() {
    let c = cluster();
    for command in COMMANDS.iter().filter(|c| c[0] != "version") {
        let mut args: Vec<&str> = command.to_vec();
        args.extend(["-n", "no-such-namespace", "--exit-code"]);
        let run = c.coord("viewer", &args).code(1);
        run.one_line_error("namespace \"no-such-namespace\" not found");
    }
    // With rights in one namespace only, the namespace object may not be readable: the
    // commands go on and read what they may.
    let ns = c.limited_namespace();
    c.coord("limited", &["leases", "-n", &ns]).ok();
    c.coord("limited", &["overlaps", "-n", &ns]).ok();
}

#[test]
fn malformed_objects_selectors_and_types() {
    let c = cluster();
    let ns = c.fresh_namespace("coord-hostile");
    for command in ["owners", "fields"] {
        for (object, code, needle) in [
            ("gadget/x", 2, "the server does not serve a resource type \"gadget\""),
            ("deploy/", 2, "\"deploy/\": the name is empty"),
            ("/x", 2, "\"/x\": the resource type is empty"),
            ("a/b/c", 2, "\"a/b/c\": expected TYPE/NAME with one '/'"),
            ("deploy/my app", 2, "\"my app\" is not a valid object name"),
            ("de ploy/x", 2, "\"de ploy\" is not a resource type"),
            ("deploy/missing", 1, "deployments \"missing\" not found in namespace"),
        ] {
            let run = c.coord("viewer", &[command, object, "-n", &ns]).code(code);
            run.one_line_error(needle);
        }
    }
    for (command, needle) in [("leases", "invalid -l selector"), ("overlaps", "-l: invalid selector")] {
        let run = c.coord("viewer", &[command, "-n", &ns, "-l", "app in (a"]).code(2);
        run.one_line_error(needle);
    }
}

#[test]
fn a_token_on_the_command_line_is_never_echoed() {
    let c = cluster();
    let token = "coord-secret-token-4f9a1c";
    let ca = c.dir.join("pki/ca.crt");
    let server = c.env("SERVER");
    for target in [server.as_str(), "https://127.0.0.1:1"] {
        for command in COMMANDS {
            let mut args: Vec<&str> = command.to_vec();
            args.extend([
                "--server",
                target,
                "--token",
                token,
                "--certificate-authority",
                ca.to_str().unwrap(),
                "--request-timeout",
                "5s",
            ]);
            let run = c.coord_bare(&args);
            assert!(!run.stdout.contains(token) && !run.stderr.contains(token), "{args:?} echoed the token");
            if command[0] != "version" {
                // The server refuses an unknown token (401), or cannot be reached.
                assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
                run.one_line_error(if target == server { "401" } else { "cannot reach the API server" });
            }
        }
    }
}
