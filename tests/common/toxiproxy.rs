//! Shopify's toxiproxy (built and cached by tests/cluster/build.sh) as the network
//! simulator between a client and a real API server: latency each way, per proxy.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Toxiproxy {
    child: Child,
    admin: SocketAddr,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Toxiproxy {
    pub fn start(bin: &std::path::Path) -> Toxiproxy {
        let port = free_port();
        let child = Command::new(bin.join("toxiproxy-server"))
            .args(["-host", "127.0.0.1", "-port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("toxiproxy-server (tests/cluster/build.sh builds it)");
        let admin: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(admin).is_err() {
            assert!(Instant::now() < deadline, "toxiproxy-server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Toxiproxy { child, admin }
    }

    fn post(&self, path: &str, body: &str) {
        let mut s = TcpStream::connect(self.admin).unwrap();
        write!(
            s,
            "POST {path} HTTP/1.1\r\nHost: toxiproxy\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        let status = reply.split_whitespace().nth(1).unwrap_or_default();
        assert!(status.starts_with('2'), "toxiproxy {path}: {reply}");
    }

    /// A proxy to `upstream` adding `latency_ms` each way; returns where it listens.
    pub fn proxy(&self, name: &str, upstream: SocketAddr, latency_ms: u64) -> SocketAddr {
        let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        self.post("/proxies", &format!(r#"{{"name":"{name}","listen":"{listen}","upstream":"{upstream}"}}"#));
        for stream in ["upstream", "downstream"] {
            self.post(
                &format!("/proxies/{name}/toxics"),
                &format!(
                    r#"{{"name":"latency-{stream}","type":"latency","stream":"{stream}","attributes":{{"latency":{latency_ms}}}}}"#
                ),
            );
        }
        listen
    }
}

impl Drop for Toxiproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
