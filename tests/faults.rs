//! Server faults in the middle of a command, for every command: a loopback TCP proxy
//! sits in front of the real API server (TLS passes through it untouched) and slows
//! every chunk, then either black-holes the connections or dies. Each command must
//! end within --request-timeout plus a small margin, with one line naming the server
//! and exit 1, and never hang.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use common::{Cluster, cluster};

const FORWARD: u8 = 0;
const BLACK_HOLE: u8 = 1;
const DEAD: u8 = 2;

struct Proxy {
    addr: SocketAddr,
    mode: Arc<AtomicU8>,
}

impl Proxy {
    /// Forwards to `upstream`, sleeping `delay` before passing on each chunk.
    fn start(upstream: SocketAddr, delay: Duration) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let mode = Arc::new(AtomicU8::new(FORWARD));
        let m = mode.clone();
        std::thread::spawn(move || {
            while m.load(Ordering::SeqCst) != DEAD {
                match listener.accept() {
                    Ok((client, _)) => {
                        let Ok(server) = TcpStream::connect(upstream) else { continue };
                        client.set_nonblocking(false).unwrap();
                        for (from, to) in [(&client, &server), (&server, &client)] {
                            let (from, to, m) = (from.try_clone().unwrap(), to.try_clone().unwrap(), m.clone());
                            std::thread::spawn(move || pump(from, to, &m, delay));
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            // Dropping the listener: new connections are refused.
        });
        Proxy { addr, mode }
    }

    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.set(DEAD);
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, mode: &AtomicU8, delay: Duration) {
    from.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match mode.load(Ordering::SeqCst) {
            DEAD => {
                let _ = from.shutdown(Shutdown::Both);
                let _ = to.shutdown(Shutdown::Both);
                return;
            }
            BLACK_HOLE => {
                // Swallow whatever arrives, answer nothing, keep the connection open.
                if let Ok(0) = from.read(&mut buf) {
                    return;
                }
                continue;
            }
            _ => {}
        }
        match from.read(&mut buf) {
            Ok(0) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => {
                std::thread::sleep(delay);
                if mode.load(Ordering::SeqCst) != FORWARD || to.write_all(&buf[..n]).is_err() {
                    continue;
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

/// The viewer's kubeconfig, pointed at `addr` instead of the API server.
fn kubeconfig_via(c: &Cluster, addr: SocketAddr, name: &str) -> std::path::PathBuf {
    let server = c.env("SERVER");
    let text = std::fs::read_to_string(c.kubeconfig("viewer")).unwrap().replace(&server, &format!("https://{addr}"));
    let path = c.dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn upstream(c: &Cluster) -> SocketAddr {
    format!("127.0.0.1:{}", c.env("API_PORT")).parse().unwrap()
}

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
    let proxy = Proxy::start(upstream(c), Duration::from_millis(30));
    let kubeconfig = kubeconfig_via(c, proxy.addr, &format!("faults-{}.kubeconfig", proxy.addr.port()));
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
            run.one_line_error("cannot reach the API server at https://127.0.0.1:");
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
