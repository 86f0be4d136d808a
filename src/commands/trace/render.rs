//! `trace` output: a timeline table with the tree in its OBJECT column and the stalls
//! below it for people; the `Trace` report for machines; Chrome trace-event JSON
//! (Perfetto, chrome://tracing) with one track per writer.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;
use serde_json::json;

use super::Explained;
use crate::analyze::sequence::{Hop, HopKind, Lag, Precision, TraceSnapshot};
use crate::analyze::stall::{LeaseVerdict, Responsible, StallKind, sentence};
use crate::commands::owners::fetch::Skipped;
use crate::output::table::{Grid, Tone, styled};
use crate::output::{Printer, SCHEMA_VERSION, paint, serde_name};

pub use crate::commands::owners::render::footer;

pub struct Report {
    pub snap: TraceSnapshot,
    pub hops: Vec<Hop>,
    pub stalls: Vec<Explained>,
    pub skipped: Vec<Skipped>,
    pub server_time: Timestamp,
    pub stall_after: Duration,
}

/// What the coarse signals are worth, said once in every report.
pub const SIGNALS: &[&str] = &[
    "creationTimestamp and managedFields times have whole seconds: lags between them are ±1s",
    "managedFields keep each manager's last write only: earlier writes by the same manager are not seen",
    "Events are rate-limited by their emitters and expire after about an hour (--event-ttl)",
];

// ---- machine output -------------------------------------------------------------

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TraceWire<'a> {
    api_version: &'static str,
    kind: &'static str,
    server_time: Timestamp,
    complete: bool,
    skipped: &'a [Skipped],
    stall_after_seconds: u64,
    signals: &'static [&'static str],
    objects: Vec<ObjectWire<'a>>,
    hops: Vec<HopWire<'a>>,
    stalls: Vec<StallWire<'a>>,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ObjectWire<'a> {
    /// TYPE/NAME as kubectl takes it.
    #[serde(rename = "ref")]
    reference: String,
    #[serde(flatten)]
    object: &'a crate::analyze::sequence::TraceObject,
    /// Index of the object it hangs under.
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<usize>,
}

/// The hop as analysed (its `object` index included) plus the object's TYPE/NAME.
#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct HopWire<'a> {
    #[serde(rename = "ref")]
    reference: String,
    #[serde(flatten)]
    hop: &'a Hop,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct StallWire<'a> {
    object: usize,
    #[serde(rename = "ref")]
    reference: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    kind: StallKind,
    /// The kind's stable code (CO5xx).
    code: &'static str,
    what: &'a str,
    since: Option<Timestamp>,
    stalled_seconds: Option<i64>,
    responsible: &'a Responsible,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease: Option<&'a LeaseVerdict>,
    evidence: &'a [String],
    /// The whole finding in one sentence, as the table prints it.
    message: String,
}

impl Report {
    pub fn machine(&self) -> TraceWire<'_> {
        let label = |i: usize| self.snap.objects[i].label();
        TraceWire {
            api_version: SCHEMA_VERSION,
            kind: "Trace",
            server_time: self.server_time,
            complete: self.skipped.is_empty(),
            skipped: &self.skipped,
            stall_after_seconds: self.stall_after.as_secs(),
            signals: SIGNALS,
            objects: self
                .snap
                .objects
                .iter()
                .enumerate()
                .map(|(i, o)| ObjectWire { reference: o.label(), object: o, parent: self.snap.parent[i] })
                .collect(),
            hops: self.hops.iter().map(|h| HopWire { reference: label(h.object), hop: h }).collect(),
            stalls: self
                .stalls
                .iter()
                .map(|e| StallWire {
                    object: e.stall.object,
                    reference: label(e.stall.object),
                    namespace: self.snap.objects[e.stall.object].namespace.as_deref(),
                    kind: e.stall.kind,
                    code: e.stall.code,
                    what: &e.stall.what,
                    since: e.stall.since,
                    stalled_seconds: e.stall.stalled_seconds,
                    responsible: &e.stall.responsible,
                    lease: e.lease.as_ref(),
                    evidence: &e.stall.evidence,
                    message: sentence(&e.stall, e.lease.as_ref()),
                })
                .collect(),
        }
    }

    // ---- people ---------------------------------------------------------------------

    pub fn text(&self, printer: &Printer) -> String {
        let root = &self.snap.objects[0];
        let place = root.namespace.as_deref().map(|n| format!(" in namespace {n}")).unwrap_or_default();
        let mut text = format!(
            "{}{place}: {} objects, {} hops; server time {}\n",
            root.label(),
            self.snap.objects.len(),
            self.hops.len(),
            self.server_time.strftime("%Y-%m-%dT%H:%M:%SZ")
        );
        text.push_str(&paint(
            "Times are whole seconds unless shown with milliseconds: lags between them are ±1s. Events expire after ~1h.\n\n",
            Tone::Dim,
            printer.color,
        ));
        let wide = printer.wide();
        let mut headers = vec!["TIME", "LAG", "OBJECT", "HOP", "WRITER", "WHAT"];
        if wide {
            headers.push("CAUSE");
        }
        let mut grid = Grid::new(headers);
        for h in &self.hops {
            let time = h.time.map(|t| clock(t, h.precision)).unwrap_or_else(|| "?".into());
            let lag = h.lag.as_ref().map(Lag::text).unwrap_or_else(|| "-".into());
            // Rows are in time order, so the tree shows as indentation, not box drawing.
            let depth = self.snap.prefix[h.object].chars().count() / 2;
            let object = format!("{}{}", "  ".repeat(depth), self.snap.objects[h.object].label());
            let tone = match h.kind {
                HopKind::Event if h.what.starts_with("Failed") => Tone::Warn,
                HopKind::Deleting => Tone::Warn,
                _ => Tone::Plain,
            };
            let mut row = vec![
                time.into(),
                lag.into(),
                object.into(),
                serde_name(&h.kind).into(),
                h.writer.clone().into(),
                styled(h.what.clone(), tone),
            ];
            if wide {
                let cause = h.cause.map(|c| {
                    let cause = &self.hops[c];
                    format!("{} {}", self.snap.objects[cause.object].label(), serde_name(&cause.kind))
                });
                row.push(cause.unwrap_or_default().into());
            }
            grid.row(row);
        }
        text.push_str(&grid.render(printer));
        let annotated: Vec<String> = self
            .snap
            .objects
            .iter()
            .flat_map(|o| o.trace_annotations.iter().map(move |(k, v)| format!("  {} {k}={v}", o.label())))
            .collect();
        if !annotated.is_empty() {
            text.push_str("\nTrace annotations:\n");
            text.push_str(&annotated.join("\n"));
            text.push('\n');
        }
        text.push('\n');
        if self.stalls.is_empty() {
            let after = crate::age::human(self.stall_after);
            text.push_str(&paint(
                &format!("No stalls (nothing outstanding for longer than {after}).\n"),
                Tone::Good,
                printer.color,
            ));
            return text;
        }
        text.push_str(&self.stall_text(printer));
        text
    }

    /// The STALLS section: one sentence per stall, its evidence indented below.
    pub fn stall_text(&self, printer: &Printer) -> String {
        if self.stalls.is_empty() {
            return paint("No stalls.\n", Tone::Good, printer.color);
        }
        let mut text = paint(&format!("STALLS ({})\n", self.stalls.len()), Tone::Bad, printer.color);
        for e in &self.stalls {
            let o = &self.snap.objects[e.stall.object];
            let line = format!(
                "  {} {} {}: {}\n",
                o.label(),
                e.stall.code,
                serde_name(&e.stall.kind),
                sentence(&e.stall, e.lease.as_ref())
            );
            text.push_str(&paint(&line, Tone::Bad, printer.color));
            for ev in &e.stall.evidence {
                text.push_str(&format!("      {ev}\n"));
            }
        }
        text
    }

    /// The hops as spans from their cause to themselves, on one track per writer.
    pub fn chrome_tracks(&self) -> Vec<Span> {
        self.hops
            .iter()
            .filter_map(|h| {
                let end = h.time?;
                let start = h.cause.and_then(|c| self.hops[c].time).filter(|s| *s <= end).unwrap_or(end);
                let writer = if h.writer.is_empty() { "(unknown writer)".to_string() } else { h.writer.clone() };
                Some(Span {
                    track: writer,
                    name: format!("{} {}", serde_name(&h.kind), self.snap.objects[h.object].label()),
                    start,
                    end,
                    args: json!({"what": h.what, "source": h.source, "lag": h.lag.map(|l| l.text())}),
                })
            })
            .collect()
    }
}

/// HH:MM:SS, with milliseconds for precise times.
pub fn clock(t: Timestamp, precision: Precision) -> String {
    match precision {
        Precision::Second => t.strftime("%H:%M:%S").to_string(),
        Precision::Microsecond => t.strftime("%H:%M:%S%.3f").to_string(),
    }
}

/// One span of the Chrome trace: from the cause (or the moment itself) to the reaction.
pub struct Span {
    pub track: String,
    pub name: String,
    pub start: Timestamp,
    pub end: Timestamp,
    pub args: serde_json::Value,
}

/// Chrome trace-event JSON: a metadata event naming each track, then one complete ("X")
/// event per span, or an instant ("i") where it has no duration. Times in microseconds
/// from the first span.
pub fn chrome(spans: &[Span]) -> String {
    let origin = spans.iter().map(|s| s.start).min().map(|t| t.as_microsecond()).unwrap_or(0);
    let mut tracks: BTreeMap<&str, usize> = BTreeMap::new();
    for s in spans {
        let next = tracks.len() + 1;
        tracks.entry(s.track.as_str()).or_insert(next);
    }
    let mut events: Vec<serde_json::Value> =
        vec![json!({"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "kubectl coord trace"}})];
    for (name, tid) in &tracks {
        events.push(json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}}));
    }
    for s in spans {
        let tid = tracks[s.track.as_str()];
        let ts = s.start.as_microsecond() - origin;
        let dur = s.end.as_microsecond() - s.start.as_microsecond();
        events.push(if dur > 0 {
            json!({"name": s.name, "cat": "reaction", "ph": "X", "ts": ts, "dur": dur, "pid": 1, "tid": tid, "args": s.args})
        } else {
            json!({"name": s.name, "cat": "reaction", "ph": "i", "s": "t", "ts": ts, "pid": 1, "tid": tid, "args": s.args})
        });
    }
    serde_json::to_string_pretty(&json!({"traceEvents": events, "displayTimeUnit": "ms"}))
        .expect("JSON values serialize")
        + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::sequence::tests::{rollout, ts};
    use crate::analyze::sequence::timeline;
    use crate::analyze::stall::{LeaseLookup, judge, stalls};
    use crate::cli::OutputFormat;

    fn report() -> Report {
        let snap = rollout();
        let hops = timeline(&snap);
        let now = ts("2026-01-01T10:05:00Z");
        let stalls = stalls(&snap, now, 30)
            .into_iter()
            .map(|stall| {
                let lease = judge(&stall, &LeaseLookup::Missing, now);
                Explained { stall, lease: Some(lease) }
            })
            .collect();
        Report { snap, hops, stalls, skipped: vec![], server_time: now, stall_after: Duration::from_secs(30) }
    }

    fn printer(format: OutputFormat) -> Printer {
        Printer::plain(format, None)
    }

    #[test]
    fn fits_80_and_120_columns() {
        for (width, text) in crate::output::screens(|p| crate::output::table::fit_lines(&report().text(p), p.width)) {
            assert!(text.contains("STALLS (1)") && text.contains("CO503 unscheduled"), "{text}");
            insta::assert_snapshot!(format!("trace_{width}"), text);
        }
    }

    #[test]
    fn the_table_is_a_timeline_with_the_tree_and_the_stalls() {
        let text = report().text(&printer(OutputFormat::Table));
        assert!(text.starts_with("deployment.apps/web in namespace ns: 3 objects,"), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        let header = lines.iter().position(|l| l.starts_with("TIME")).expect(&text);
        assert!(lines[header + 1].starts_with("10:00:00"), "{text}");
        let rs = lines.iter().find(|l| l.contains("  replicaset.apps/web-1") && l.contains("created")).expect(&text);
        assert!(rs.contains("1s±1s") && rs.contains("kube-controller-manager [deployment-controller]"), "{rs}");
        let sched = lines.iter().find(|l| l.contains("FailedScheduling")).expect(&text);
        assert!(sched.starts_with("10:01:01.250"), "precise event times keep milliseconds: {sched}");
        assert!(
            text.contains("STALLS (1)\n  pod/web-1-a CO503 unscheduled: no node assigned for 3m59s; the scheduler"),
            "{text}"
        );
        assert!(text.contains("      FailedScheduling (default-scheduler x3"), "{text}");
    }

    #[test]
    fn the_machine_report_carries_every_hop_with_its_evidence() {
        let r = report();
        let v = serde_json::to_value(r.machine()).unwrap();
        assert_eq!(v["kind"], "Trace");
        assert_eq!(v["complete"], true);
        assert_eq!(v["objects"][1]["ref"], "replicaset.apps/web-1");
        assert_eq!(v["objects"][1]["parent"], 0);
        let hop = v["hops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["ref"] == "replicaset.apps/web-1" && h["kind"] == "created")
            .unwrap();
        assert_eq!(hop["lag"], json!({"millis": 1000, "plusMinusMillis": 1000}));
        assert_eq!(hop["source"], "creationTimestamp");
        assert_eq!(hop["precision"], "second");
        let stall = &v["stalls"][0];
        assert_eq!(stall["kind"], "unscheduled");
        assert_eq!(stall["lease"]["state"], "missing");
        assert!(stall["message"].as_str().unwrap().contains("kube-system/kube-scheduler does not exist"));
    }

    #[test]
    fn chrome_trace_has_one_track_per_writer_and_spans_from_cause_to_effect() {
        let r = report();
        let v: serde_json::Value = serde_json::from_str(&chrome(&r.chrome_tracks())).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        let tracks: Vec<&str> =
            events.iter().filter(|e| e["name"] == "thread_name").map(|e| e["args"]["name"].as_str().unwrap()).collect();
        assert!(tracks.contains(&"default-scheduler") && tracks.contains(&"kubectl-rollout"), "{tracks:?}");
        let rs = events.iter().find(|e| e["name"] == "created replicaset.apps/web-1").unwrap();
        assert_eq!((rs["ph"].as_str(), rs["dur"].as_i64()), (Some("X"), Some(1_000_000)));
        assert!(events.iter().all(|e| e["ts"].as_i64().unwrap_or(0) >= 0));
    }
}
