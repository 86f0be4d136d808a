//! A real client-go leader-election participant (tests/cluster/k8s/elector), stopped when
//! dropped.

use std::process::{Child, Command, Stdio};

use super::Cluster;

pub struct Elector {
    pub child: Child,
    pub identity: String,
}

impl Drop for Elector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts an elector for Lease `elect` in `ns` as `identity`, with its lease duration, renew
/// deadline and retry period (`["6s", "4s", "1s"]`).
pub fn elector(c: &Cluster, ns: &str, identity: &str, timing: [&str; 3]) -> Elector {
    let [duration, renew, retry] = timing;
    let child = Command::new(c.bin().join("coord-test-elector"))
        .args(["-kubeconfig", c.kubeconfig("admin").to_str().unwrap(), "-namespace", ns, "-lease", "elect"])
        .args(["-identity", identity, "-duration", duration, "-renew", renew, "-retry", retry])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("coord-test-elector (built by tests/cluster/build.sh)");
    // Recorded so down.sh stops it even if the test dies.
    std::fs::write(c.dir.join(format!("pids/elector-{identity}.pid")), child.id().to_string()).unwrap();
    Elector { child, identity: identity.to_string() }
}
