//! The threads behind [`super::read`]: a reader per input (it decompresses and cuts whole-line
//! blocks), parsers on every core, and on the calling thread the merge: each input's blocks
//! back in order, every input's requests in time order, each request once.
//!
//! Inputs start in the order of their first event, and only once the others have reached that
//! time: rotated files of one API server are read one after another, several servers' logs side
//! by side. An input may run a few blocks ahead of the merge, no more; within one, requests may
//! come a little out of order (the log is written as requests complete), so the merge holds
//! [`SLACK`] of each input before letting a request go.

use std::collections::{BTreeMap, BinaryHeap, HashSet, VecDeque};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Condvar, Mutex};

use super::event::{self, Counts, Read, Want};
use super::input::{self, Block, Lines, Source};
use super::{Skips, Summary};
use crate::snapshot::audit::{Micros, Request};

/// How far out of order requests may come within one input.
const SLACK: Micros = 10_000_000;
/// Blocks an input may have read ahead of the merge.
const AHEAD: usize = 4;
/// How long an id is remembered to drop a second copy of its request.
const DEDUPE_WINDOW: Micros = 120_000_000;

struct Job {
    block: Block,
    seq: u64,
    /// The input's name, for where a skipped line was.
    name: Arc<str>,
    results: Sender<Message>,
}

/// What a stream's channel carries: a parsed block, or the stream's end.
enum Message {
    Parsed { seq: u64, parsed: Parsed },
    End { blocks: u64, bytes: u64, failed: Option<String> },
}

#[derive(Default)]
struct Parsed {
    requests: Vec<Request>,
    counts: Counts,
    skips: Skips,
}

/// An input's progress as the merge sees it.
struct Stream {
    name: String,
    results: Receiver<Message>,
    waiting: BTreeMap<u64, Parsed>,
    next: u64,
    end: Option<u64>,
    /// The latest time seen in this input so far.
    seen: Micros,
    in_flight: Arc<(Mutex<usize>, Condvar)>,
    events: u64,
    bytes: u64,
}

impl Stream {
    fn finished(&self) -> bool {
        self.end.is_some_and(|end| self.next >= end)
    }
}

pub fn run(
    sources: Vec<Source>,
    want: &Want,
    threads: usize,
    mut sink: impl FnMut(Request),
) -> Result<Summary, String> {
    let mut summary = Summary { inputs: super::names(&sources), ..Default::default() };
    // Each input's first event time: inputs start in that order (stdin, unpeekable, first).
    let mut pending: Vec<(Option<Micros>, Source)> = Vec::new();
    for source in sources {
        match peek(&source)? {
            Peek::Starts(at) => pending.push((at, source)),
            Peek::Empty => {}
            Peek::NotAudit => summary.not_audit.push(source.name()),
        }
    }
    pending.sort_by_key(|(at, _)| at.unwrap_or(Micros::MIN));
    let mut pending: VecDeque<(Option<Micros>, Source)> = pending.into();
    let (jobs_tx, jobs_rx) = mpsc::sync_channel::<Job>(threads * 2);
    let jobs_rx = Arc::new(Mutex::new(jobs_rx));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let jobs = Arc::clone(&jobs_rx);
            let want = want.clone();
            std::thread::spawn(move || parse_jobs(&jobs, &want))
        })
        .collect();

    let mut streams: Vec<Stream> = Vec::new();
    let mut heap: BinaryHeap<Entry> = BinaryHeap::new();
    let mut slots = Slots::default();
    let mut order = 0u64;
    let mut seen_ids: HashSet<u128> = HashSet::new();
    let mut id_times: VecDeque<(Micros, u128)> = VecDeque::new();
    let mut emit = |request: Request, summary: &mut Summary| {
        let id = crate::snapshot::audit::id_number(&request.audit_id);
        while id_times.front().is_some_and(|(t, _)| *t < request.at - DEDUPE_WINDOW) {
            if let Some((_, old)) = id_times.pop_front() {
                seen_ids.remove(&old);
            }
        }
        if !request.audit_id.is_empty() && !seen_ids.insert(id) {
            summary.duplicates += 1;
            return;
        }
        id_times.push_back((request.at, id));
        sink(request);
    };
    loop {
        // Start the next input once the running ones have reached its first event.
        while let Some((at, _)) = pending.front() {
            let reached = streams.iter().filter(|s| !s.finished()).map(|s| s.seen).min();
            if reached.is_some_and(|r| at.is_some_and(|at| r < at)) {
                break;
            }
            let (_, source) = pending.pop_front().expect("peeked");
            streams.push(start(source, jobs_tx.clone(), want));
        }
        // The input furthest behind decides what may go out: read its next block.
        let Some(i) = (0..streams.len()).filter(|&i| !streams[i].finished()).min_by_key(|&i| streams[i].seen) else {
            break;
        };
        let s = &mut streams[i];
        match s.waiting.remove(&s.next) {
            Some(parsed) => {
                s.next += 1;
                let (lock, freed) = &*s.in_flight;
                *lock.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
                freed.notify_one();
                s.events += parsed.counts.events;
                summary.counts.add(&parsed.counts);
                summary.skipped.merge(&parsed.skips);
                for r in parsed.requests {
                    s.seen = s.seen.max(r.at);
                    heap.push(Entry { at: r.at, order, slot: slots.put(r) });
                    order += 1;
                }
                if let Some(last) = parsed.counts.last {
                    s.seen = s.seen.max(last);
                }
            }
            None => match s.results.recv() {
                Ok(Message::Parsed { seq, parsed }) => {
                    s.waiting.insert(seq, parsed);
                }
                Ok(Message::End { blocks, bytes, failed }) => {
                    s.end = Some(blocks);
                    s.bytes = bytes;
                    summary.bytes += bytes;
                    if let Some(why) = failed {
                        summary.skipped.unreadable.add(|| format!("{}: {why}", s.name));
                    }
                }
                // A reader that died without saying: take it as ended where it is.
                Err(_) => s.end = Some(s.next),
            },
        }
        let mut mark =
            streams.iter().filter(|s| !s.finished()).map(|s| s.seen.saturating_sub(SLACK)).min().unwrap_or(Micros::MAX);
        if let Some(at) = pending.front().and_then(|(at, _)| *at) {
            mark = mark.min(at.saturating_sub(1));
        }
        while heap.peek().is_some_and(|e| e.at <= mark) {
            let entry = heap.pop().expect("peeked");
            emit(slots.take(entry.slot), &mut summary);
        }
    }
    while let Some(entry) = heap.pop() {
        emit(slots.take(entry.slot), &mut summary);
    }
    drop(jobs_tx);
    for w in workers {
        let _ = w.join();
    }
    for s in &streams {
        if s.events == 0 && s.bytes > 0 {
            summary.not_audit.push(s.name.clone());
        }
    }
    summary.first = summary.counts.first;
    summary.last = summary.counts.last;
    if summary.counts.events == 0 && !summary.not_audit.is_empty() {
        let named = summary.not_audit.join(", ");
        return Err(format!("--audit-log {named}: not an audit log (no audit.k8s.io event in it)"));
    }
    Ok(summary)
}

/// A request waiting in the merge, earliest first (then in the order read). The request
/// itself waits in a slot of [`Slots`]: a heap of whole requests moved a few hundred bytes
/// for every step of every sift, the largest share of the merge's time.
struct Entry {
    at: Micros,
    order: u64,
    slot: usize,
}

/// The requests the heap's entries point to, and the slots free for new ones.
#[derive(Default)]
struct Slots {
    requests: Vec<Option<Request>>,
    free: Vec<usize>,
}

impl Slots {
    fn put(&mut self, request: Request) -> usize {
        match self.free.pop() {
            Some(slot) => {
                self.requests[slot] = Some(request);
                slot
            }
            None => {
                self.requests.push(Some(request));
                self.requests.len() - 1
            }
        }
    }

    fn take(&mut self, slot: usize) -> Request {
        self.free.push(slot);
        self.requests[slot].take().expect("a slot in the heap holds its request")
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Entry) -> std::cmp::Ordering {
        (other.at, other.order).cmp(&(self.at, self.order))
    }
}

enum Peek {
    /// An audit log whose first event is at this time (None: not known before reading it).
    Starts(Option<Micros>),
    Empty,
    NotAudit,
}

/// Opens an input and reads its first block: when it starts, or that it holds no audit event.
fn peek(source: &Source) -> Result<Peek, String> {
    if *source == Source::Stdin {
        return Ok(Peek::Starts(None));
    }
    let reader = source.open().map_err(|e| format!("--audit-log {}: {e}", source.name()))?;
    let mut lines = Lines::new(reader);
    let Some(block) = lines.next_block() else {
        return Ok(match lines.failed {
            Some(e) => return Err(format!("--audit-log {}: {e}", source.name())),
            None => Peek::Empty,
        });
    };
    if input::is_json_document(&block.text) {
        return Ok(Peek::Starts(None));
    }
    let want = Want { reads: true, dry_run: true, ..Want::default() };
    let parsed = parse_block(block, &want, &source.name());
    Ok(match parsed.counts.first {
        Some(at) => Peek::Starts(Some(at)),
        None if parsed.counts.events > 0 => Peek::Starts(None),
        None => Peek::NotAudit,
    })
}

/// Starts reading an input on its own thread.
fn start(source: Source, jobs: SyncSender<Job>, want: &Want) -> Stream {
    let (results_tx, results_rx) = mpsc::channel();
    let in_flight = Arc::new((Mutex::new(0usize), Condvar::new()));
    let gate = Arc::clone(&in_flight);
    let name = source.name();
    let want = want.clone();
    std::thread::spawn(move || read_input(&source, &jobs, &results_tx, &gate, &want));
    Stream {
        name,
        results: results_rx,
        waiting: BTreeMap::new(),
        next: 0,
        end: None,
        seen: Micros::MIN,
        in_flight,
        events: 0,
        bytes: 0,
    }
}

/// Waits until the input may have another block ahead of the merge, then counts it.
fn wait_for_room(gate: &(Mutex<usize>, Condvar)) {
    let (lock, freed) = gate;
    let mut n = lock.lock().unwrap_or_else(|e| e.into_inner());
    while *n >= AHEAD {
        n = freed.wait(n).unwrap_or_else(|e| e.into_inner());
    }
    *n += 1;
}

fn read_input(
    source: &Source,
    jobs: &SyncSender<Job>,
    results: &Sender<Message>,
    gate: &(Mutex<usize>, Condvar),
    want: &Want,
) {
    let name: Arc<str> = source.name().into();
    let reader = match source.open() {
        Ok(r) => r,
        Err(e) => {
            let _ = results.send(Message::End { blocks: 0, bytes: 0, failed: Some(e.to_string()) });
            return;
        }
    };
    let mut lines = Lines::new(reader);
    let mut seq = 0;
    while let Some(block) = lines.next_block() {
        if seq == 0 && input::is_json_document(&block.text) {
            // A JSON document is read as one stream of values on this thread, from its start.
            let end = read_document(block, lines, results, gate, want, &name);
            let _ = results.send(end);
            return;
        }
        wait_for_room(gate);
        if jobs.send(Job { block, seq, name: Arc::clone(&name), results: results.clone() }).is_err() {
            return;
        }
        seq += 1;
    }
    let failed = lines.failed.take().map(|e| cut_reason(&e));
    let _ = results.send(Message::End { blocks: seq, bytes: lines.bytes, failed });
}

/// What a reader's error says, in the summary's words.
fn cut_reason(error: &str) -> String {
    if error.contains("unexpected end of file") || error.contains("corrupt deflate") || error.contains("invalid gzip") {
        format!("the gzip data is cut short or damaged ({error})")
    } else {
        error.to_string()
    }
}

/// A JSON document (or several, concatenated): each top-level value read in turn, on the
/// reader's thread, from the first block's bytes on.
fn read_document(
    first: Block,
    rest: Lines<Box<dyn std::io::BufRead + Send>>,
    results: &Sender<Message>,
    gate: &(Mutex<usize>, Condvar),
    want: &Want,
    name: &str,
) -> Message {
    let reader = std::io::Read::chain(std::io::Cursor::new(first.text), rest.into_inner());
    let mut values = serde_json::Deserializer::from_reader(reader).into_iter::<Box<serde_json::value::RawValue>>();
    let (mut seq, mut count, mut bytes) = (0, 0u64, 0u64);
    let mut parsed = Parsed::default();
    let flush = |parsed: &mut Parsed, seq: &mut u64| {
        wait_for_room(gate);
        let _ = results.send(Message::Parsed { seq: *seq, parsed: std::mem::take(parsed) });
        *seq += 1;
    };
    loop {
        match values.next() {
            None => break,
            Some(Ok(value)) => {
                count += 1;
                bytes += value.get().len() as u64;
                if event::read(value.get().as_bytes(), want, &mut parsed.requests, &mut parsed.counts) == Read::Invalid
                {
                    parsed.skips.not_json.add(|| format!("{name}: value {count}"));
                }
                if parsed.requests.len() >= 4096 {
                    flush(&mut parsed, &mut seq);
                }
            }
            Some(Err(e)) => {
                let at = format!("{name}:{}", e.line());
                if e.is_eof() {
                    parsed.skips.cut_short.add(|| at);
                } else {
                    parsed.skips.not_json.add(|| at);
                }
                break;
            }
        }
    }
    flush(&mut parsed, &mut seq);
    Message::End { blocks: seq, bytes, failed: None }
}

fn parse_jobs(jobs: &Mutex<Receiver<Job>>, want: &Want) {
    loop {
        let job = match jobs.lock() {
            Ok(rx) => rx.recv(),
            Err(e) => e.into_inner().recv(),
        };
        let Ok(Job { block, seq, name, results }) = job else { return };
        let parsed = parse_block(block, want, &name);
        let _ = results.send(Message::Parsed { seq, parsed });
    }
}

/// The text's lines, split at each newline (the last one may be empty), found with memchr.
fn lines_of(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    let mut ends = memchr::memchr_iter(b'\n', text);
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        match ends.next() {
            Some(end) => {
                let line = &text[start..end];
                start = end + 1;
                Some(line)
            }
            None => {
                done = true;
                Some(&text[start..])
            }
        }
    })
}

/// Every line of a block read into requests; what cannot be read counted with its line.
fn parse_block(block: Block, want: &Want, name: &str) -> Parsed {
    let mut parsed = Parsed::default();
    for line in &block.too_long {
        parsed.skips.too_long.add(|| format!("{name}:{line}"));
    }
    let mut lines = lines_of(&block.text).peekable();
    let mut number = block.first_line;
    while let Some(line) = lines.next() {
        let last = lines.peek().is_none();
        if last && line.is_empty() {
            break;
        }
        match event::read(line, want, &mut parsed.requests, &mut parsed.counts) {
            Read::Invalid if last && block.unterminated => parsed.skips.cut_short.add(|| format!("{name}:{number}")),
            Read::Invalid => parsed.skips.not_json.add(|| format!("{name}:{number}")),
            Read::NotAudit | Read::Events(_) => {}
        }
        number += 1;
    }
    parsed
}
