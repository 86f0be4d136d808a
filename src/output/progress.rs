//! A progress line on stderr for commands that read for more than a second: how many
//! lists are done and running, and how many objects were read. Only when stderr is a
//! terminal (never in pipes or CI logs), erased before anything is printed.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

static LISTS_STARTED: AtomicU64 = AtomicU64::new(0);
static LISTS_DONE: AtomicU64 = AtomicU64::new(0);
static OBJECTS: AtomicU64 = AtomicU64::new(0);
/// Set once output starts: the line is never drawn again.
static STOPPED: AtomicBool = AtomicBool::new(false);
/// Whether a line is on the terminal now; the lock also keeps draws and erases apart.
static SHOWN: Mutex<bool> = Mutex::new(false);

/// Counts a list as running until the returned guard drops (done, failed or abandoned).
pub fn list() -> ListGuard {
    LISTS_STARTED.fetch_add(1, Ordering::Relaxed);
    ListGuard
}

pub struct ListGuard;

impl Drop for ListGuard {
    fn drop(&mut self) {
        LISTS_DONE.fetch_add(1, Ordering::Relaxed);
    }
}

pub fn objects_read(n: usize) {
    OBJECTS.fetch_add(n as u64, Ordering::Relaxed);
}

/// "reading: 12 lists done, 3 running, 45,312 objects"
pub fn line(started: u64, done: u64, objects: u64) -> String {
    let running = started.saturating_sub(done);
    format!("reading: {} done, {running} running, {} objects", super::counted(done as usize, "list"), grouped(objects))
}

fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Starts the ticker when stderr is a terminal: nothing for the first second
/// (KUBECTL_COORD_PROGRESS_AFTER_MS overrides it, for tests), then a redraw every 200 ms.
pub fn start() {
    if !std::io::stderr().is_terminal() || std::env::var_os("KUBECTL_COORD_NO_PROGRESS").is_some() {
        return;
    }
    let after = std::env::var("KUBECTL_COORD_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(Duration::from_secs(1));
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        while !STOPPED.load(Ordering::Relaxed) {
            draw();
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}

fn draw() {
    let Ok(mut shown) = SHOWN.lock() else { return };
    if STOPPED.load(Ordering::Relaxed) {
        return;
    }
    let text = line(
        LISTS_STARTED.load(Ordering::Relaxed),
        LISTS_DONE.load(Ordering::Relaxed),
        OBJECTS.load(Ordering::Relaxed),
    );
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K{text}");
    let _ = err.flush();
    *shown = true;
}

/// Erases the line (before a warning); it comes back at the next tick.
pub fn erase() {
    let Ok(mut shown) = SHOWN.lock() else { return };
    if *shown {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
        *shown = false;
    }
}

/// Erases the line for good: output has started.
pub fn stop() {
    STOPPED.store(true, Ordering::Relaxed);
    erase();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_counts_lists_and_objects() {
        assert_eq!(line(15, 12, 45_312), "reading: 12 lists done, 3 running, 45,312 objects");
        assert_eq!(line(0, 0, 0), "reading: 0 lists done, 0 running, 0 objects");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(grouped(999), "999");
    }
}
