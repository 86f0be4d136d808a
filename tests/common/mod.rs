//! Shared helpers for integration tests against the real local control plane
//! started by tests/run.sh (tests/cluster/up.sh). A missing cluster is a failure,
//! never a skip.
#![allow(dead_code)]

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
        let text = std::fs::read_to_string(self.dir.join("cluster.env")).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key} not in cluster.env"))
            .to_string()
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

    /// Runs `kubectl coord ...` through kubectl's plugin discovery: kubectl-coord on PATH.
    pub fn kubectl_plugin(&self, who: &str, args: &[&str]) -> Run {
        let plugin_dir = Path::new(env!("CARGO_BIN_EXE_kubectl-coord")).parent().unwrap().to_path_buf();
        let path = format!("{}:{}:/usr/bin:/bin", plugin_dir.display(), self.bin().display());
        let mut cmd = Command::new(self.bin().join("kubectl"));
        cmd.arg("coord").args(args).env("PATH", path).env("KUBECONFIG", self.kubeconfig(who));
        Run::of(cmd)
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
        assert_eq!(self.code, want, "{}: exit {} (want {want})\nstdout: {}\nstderr: {}", self.describe, self.code, self.stdout, self.stderr);
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
