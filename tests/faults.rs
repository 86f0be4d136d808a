//! Server faults in the middle of a command, for every command: a loopback TCP proxy
//! sits in front of the real API server (TLS passes through it untouched) and slows
//! every chunk, then either black-holes the connections or dies. Each command must
//! end within --request-timeout plus a small margin, with one line naming the server
//! and exit 1, and never hang.

mod common;

use std::time::{Duration, Instant};

use common::{Cluster, cluster};

use common::proxy::{BLACK_HOLE, DEAD, FORWARD, Proxy};

const COMMANDS: &[&[&str]] = &[
    &["version"],
    &["leases", "-A"],
    &["overlaps", "-A"],
    &["fields", "-A"],
    &["owners", "--all", "-A"],
    &["owners", "ns/default"],
];

/// Runs `args` through a proxy that turns to `fault` after `after`; returns the run and its duration.
fn run_with_fault(c: &Cluster, args: &[&str], fault: u8, after: Duration, timeout: &str) -> (common::Run, Duration) {
    let proxy = Proxy::start(c.api_addr(), Duration::from_millis(30));
    let kubeconfig = c.kubeconfig_via(proxy.addr);
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
    cmd.args(args).args(["--request-timeout", timeout]).env("KUBECONFIG", &kubeconfig);
    let started = Instant::now();
    let switch = std::thread::spawn(move || {
        std::thread::sleep(after);
        proxy.set(fault);
        std::thread::sleep(Duration::from_secs(30));
        drop(proxy);
    });
    let run = common::Run::of(cmd);
    let took = started.elapsed();
    drop(switch);
    (run, took)
}

#[test]
fn a_server_that_dies_mid_command() {
    let c = cluster();
    let mut failed = 0;
    for args in COMMANDS {
        let (run, took) = run_with_fault(&c, args, DEAD, Duration::from_millis(150), "10s");
        // A command may finish before the fault; if it does not, it fails cleanly and at once.
        if run.code != 0 {
            failed += 1;
            assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
            run.one_line_error("127.0.0.1:");
            assert!(took < Duration::from_secs(5), "{args:?} took {took:?} after the server died");
        }
    }
    assert!(failed >= 4, "the fault should catch most commands mid-way");
}

#[test]
fn a_server_that_stops_answering_mid_command() {
    let c = cluster();
    let mut failed = 0;
    for args in COMMANDS {
        let (run, took) = run_with_fault(&c, args, BLACK_HOLE, Duration::from_millis(150), "2s");
        assert!(took < Duration::from_secs(6), "{args:?} took {took:?} with --request-timeout 2s");
        if run.code != 0 {
            failed += 1;
            assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
            // Named by what happened: no answer within the limit (method, server and path),
            // or no connection at all.
            run.one_line_error("https://127.0.0.1:");
            assert!(
                run.stderr.contains("no answer within --request-timeout 2s")
                    || run.stderr.contains("cannot reach the API server at"),
                "{args:?}: {}",
                run.stderr
            );
        }
    }
    assert!(failed >= 4, "the black hole should catch most commands mid-way");
}

#[test]
fn a_slow_server_is_waited_for_within_the_timeout() {
    let c = cluster();
    // 30 ms per chunk: slow, but every request completes within 10s.
    for args in COMMANDS {
        let (run, _) = run_with_fault(&c, args, FORWARD, Duration::from_secs(60), "10s");
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
    }
}

/// A server that accepts connections and never answers, from the first byte: every command
/// (and every form of it: one object, a namespace, all namespaces, a watch) ends within about
/// one --request-timeout, not one per request it would have made. Once one request goes
/// unanswered the others fail with it. Before, `leases` took three timeouts (9 s for 3 s).
#[test]
fn a_silent_server_ends_every_command_within_one_request_timeout() {
    let c = cluster();
    let hole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = format!("https://127.0.0.1:{}", hole.local_addr().unwrap().port());
    let every: &[&[&str]] = &[
        &["version"],
        &["leases"],
        &["leases", "-A"],
        &["leases", "--watch"],
        &["overlaps"],
        &["overlaps", "-A"],
        &["fields", "deploy/x"],
        &["fields", "deploy/x", "--watch"],
        &["fields", "-A"],
        &["owners", "deploy/x"],
        &["owners", "--all", "-A"],
        &["trace", "deploy/x"],
        &["trace", "deploy/x", "--watch"],
        &["check"],
        &["check", "-A"],
    ];
    for args in every {
        let started = Instant::now();
        let run = c.coord("viewer", &[args, &["--server", &server, "--request-timeout", "2s"][..]].concat()).code(1);
        let took = started.elapsed();
        run.one_line_error("no answer within --request-timeout 2s");
        // One timeout, plus the start of the process: well under two.
        assert!(took < Duration::from_millis(3500), "{args:?} took {took:?} with --request-timeout 2s");
    }
    drop(hole);
}
