//! A loopback TCP proxy in front of the real API server, for fault tests: TLS passes
//! through untouched; it can slow every chunk, swallow everything, or die.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

pub const FORWARD: u8 = 0;
pub const BLACK_HOLE: u8 = 1;
pub const DEAD: u8 = 2;

pub struct Proxy {
    pub addr: SocketAddr,
    mode: Arc<AtomicU8>,
}

impl Proxy {
    /// Forwards to `upstream`, sleeping `delay` before passing on each chunk.
    pub fn start(upstream: SocketAddr, delay: Duration) -> Proxy {
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

    pub fn set(&self, mode: u8) {
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
