//! Shared helpers for integration tests against the real local control plane
//! started by tests/run.sh (tests/cluster/up.sh). A missing cluster is a failure,
//! never a skip.
#![allow(dead_code)]

pub mod elector;
pub mod proxy;
pub mod schema;
pub mod screen;
pub mod toxiproxy;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Cluster {
    pub dir: PathBuf,
}

pub fn cluster() -> Cluster {
    let dir = std::env::var_os("COORD_TEST_CLUSTER").map(PathBuf::from).unwrap_or_else(|| {
        panic!("COORD_TEST_CLUSTER is not set: run the suite with tests/run.sh, which starts the local control plane")
    });
    assert!(dir.join("admin.kubeconfig").is_file(), "no cluster in {}: run tests/run.sh", dir.display());
    Cluster { dir }
}

/// The second control plane tests/run.sh starts (coordinated leader election on), for the
/// fleet and LeaseCandidate tests.
pub fn cluster2() -> Cluster {
    let dir = std::env::var_os("COORD_TEST_CLUSTER_2").map(PathBuf::from).unwrap_or_else(|| {
        panic!("COORD_TEST_CLUSTER_2 is not set: run the suite with tests/run.sh, which starts two control planes")
    });
    assert!(dir.join("admin.kubeconfig").is_file(), "no second cluster in {}", dir.display());
    Cluster { dir }
}

/// The third control plane tests/run.sh starts, with real operators (up.sh --operators) and
/// nothing broken on purpose, for tests/operators.rs.
pub fn cluster3() -> Cluster {
    let dir = std::env::var_os("COORD_TEST_CLUSTER_3").map(PathBuf::from).unwrap_or_else(|| {
        panic!("COORD_TEST_CLUSTER_3 is not set: run the suite with tests/run.sh, which starts the operators' cluster")
    });
    assert!(dir.join("operators.env").is_file(), "no operators' cluster in {}", dir.display());
    Cluster { dir }
}

impl Cluster {
    pub fn kubeconfig(&self, who: &str) -> PathBuf {
        self.dir.join(format!("{who}.kubeconfig"))
    }
    pub fn bin(&self) -> PathBuf {
        self.dir.join("bin")
    }
    pub fn limited_namespace(&self) -> String {
        std::fs::read_to_string(self.dir.join("limited.namespace")).unwrap().trim().to_string()
    }
    pub fn env(&self, key: &str) -> String {
        self.env_in("cluster.env", key)
    }
    /// A value operators.sh wrote (ports, the pods the operators run as).
    pub fn operators_env(&self, key: &str) -> String {
        self.env_in("operators.env", key)
    }
    fn env_in(&self, file: &str, key: &str) -> String {
        let text = std::fs::read_to_string(self.dir.join(file)).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key} not in {file}"))
            .to_string()
    }

    /// The API server's loopback address.
    pub fn api_addr(&self) -> std::net::SocketAddr {
        format!("127.0.0.1:{}", self.env("API_PORT")).parse().unwrap()
    }

    /// The viewer's kubeconfig, pointed at `addr` (a proxy) instead of the API server.
    pub fn kubeconfig_via(&self, addr: std::net::SocketAddr) -> PathBuf {
        let server = self.env("SERVER");
        let text =
            std::fs::read_to_string(self.kubeconfig("viewer")).unwrap().replace(&server, &format!("https://{addr}"));
        let path = self.dir.join(format!("via-{}.kubeconfig", addr.port()));
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A kubeconfig that is not valid YAML.
    pub fn broken_kubeconfig(&self) -> PathBuf {
        let path = self.dir.join("broken.kubeconfig");
        std::fs::write(&path, "apiVersion: v1\nclusters: [unclosed\n").unwrap();
        path
    }

    /// `who`'s kubeconfig naming a client certificate file that does not exist (gone.crt).
    pub fn kubeconfig_missing_cert(&self, who: &str) -> PathBuf {
        let path = self.dir.join(format!("{who}-missing-cert.kubeconfig"));
        let text = std::fs::read_to_string(self.kubeconfig(who)).unwrap().replace(&format!("{who}.crt"), "gone.crt");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Runs the built plugin binary with KUBECONFIG pointing at `who`'s kubeconfig.
    pub fn coord(&self, who: &str, args: &[&str]) -> Run {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
        cmd.args(args).env("KUBECONFIG", self.kubeconfig(who)).env_remove("NO_COLOR");
        Run::of(cmd)
    }

    /// Runs the built plugin with no kubeconfig from the environment at all.
    pub fn coord_bare(&self, args: &[&str]) -> Run {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
        cmd.args(args).env_remove("KUBECONFIG").env("HOME", self.dir.join("no-home"));
        Run::of(cmd)
    }

    /// Runs the upstream kubectl as admin (for setting up objects).
    pub fn kubectl(&self, args: &[&str]) -> Run {
        let mut cmd = Command::new(self.bin().join("kubectl"));
        cmd.args(args).env("KUBECONFIG", self.kubeconfig("admin"));
        Run::of(cmd)
    }

    /// `kubectl apply -f -` as admin with the given manifest.
    #[track_caller]
    pub fn apply(&self, manifest: &str) {
        use std::io::Write;
        let mut child = Command::new(self.bin().join("kubectl"))
            .args(["apply", "-f", "-"])
            .env("KUBECONFIG", self.kubeconfig("admin"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubectl apply");
        child.stdin.take().unwrap().write_all(manifest.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "kubectl apply failed: {}\n{manifest}", String::from_utf8_lossy(&out.stderr));
    }

    /// Creates a namespace with a unique suffix, so a test can run twice on one cluster.
    pub fn fresh_namespace(&self, prefix: &str) -> String {
        // Tests of one binary run in parallel and may ask in the same microsecond: the
        // counter keeps their names apart, pid and time keep binaries and runs apart.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let name = format!("{prefix}-{:x}-{n}", (std::process::id() as u64) << 20 ^ u64::from(nanos >> 10));
        self.namespace(&name);
        name
    }

    /// Creates a namespace (idempotent).
    pub fn namespace(&self, name: &str) {
        self.apply(&format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}\n"));
    }

    /// Runs `kubectl coord ...` through kubectl's plugin discovery: kubectl-coord on PATH.
    pub fn kubectl_plugin(&self, who: &str, args: &[&str]) -> Run {
        let plugin_dir = Path::new(env!("CARGO_BIN_EXE_kubectl-coord")).parent().unwrap().to_path_buf();
        let path = format!("{}:{}:/usr/bin:/bin", plugin_dir.display(), self.bin().display());
        let mut cmd = Command::new(self.bin().join("kubectl"));
        cmd.arg("coord").args(args).env("PATH", path).env("KUBECONFIG", self.kubeconfig(who));
        Run::of(cmd)
    }
}

/// Waits until `check` holds, or fails naming `what`.
#[track_caller]
pub fn wait_for(what: &str, secs: u64, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !check() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub describe: String,
}

impl Run {
    pub fn of(mut cmd: Command) -> Run {
        let describe = format!("{cmd:?}");
        let Output { status, stdout, stderr } = cmd.output().unwrap_or_else(|e| panic!("cannot run {describe}: {e}"));
        Run {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            describe,
        }
    }

    #[track_caller]
    pub fn ok(self) -> Run {
        assert_eq!(self.code, 0, "{} failed:\nstdout: {}\nstderr: {}", self.describe, self.stdout, self.stderr);
        self
    }

    #[track_caller]
    pub fn code(self, want: i32) -> Run {
        assert_eq!(
            self.code, want,
            "{}: exit {} (want {want})\nstdout: {}\nstderr: {}",
            self.describe, self.code, self.stdout, self.stderr
        );
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }

    /// Asserts the error is exactly one line starting with "error: " and containing `needle`.
    #[track_caller]
    pub fn one_line_error(&self, needle: &str) {
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "expected one stderr line, got: {:?}", self.stderr);
        assert!(lines[0].starts_with("error: "), "{:?}", lines[0]);
        assert!(lines[0].contains(needle), "{:?} does not mention {needle:?}", lines[0]);
        assert!(!self.stderr.contains("panicked") && !self.stderr.contains("RUST_BACKTRACE"), "{}", self.stderr);
    }
}

/// RFC 3339 with microseconds, `offset_secs` from now (local clock; same machine as the server).
pub fn micro_time(offset_secs: i64) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let secs = now.as_secs() as i64 + offset_secs;
    let micros = now.subsec_micros();
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (era * 400 + yoe + i64::from(m <= 2), m, d)
}

/// A lease manifest; `renew_offset` None leaves renewTime out.
pub fn lease_yaml(
    ns: &str,
    name: &str,
    holder: &str,
    duration: i32,
    renew_offset: Option<i64>,
    transitions: i32,
) -> String {
    let renew = renew_offset
        .map(|o| format!("  renewTime: \"{}\"\n  acquireTime: \"{}\"\n", micro_time(o), micro_time(o - 60)))
        .unwrap_or_default();
    format!(
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  holderIdentity: \"{holder}\"\n  leaseDurationSeconds: {duration}\n  leaseTransitions: {transitions}\n{renew}"
    )
}
