//! `history` output: a table of one object's writes, or the window's findings (as check shows
//! them) and the reaction lags; the History and HistoryFindings reports for scripts.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analyze::check::{Finding, Mechanism, Severity, Summary};
use crate::analyze::history::findings::{self, Conflicts, Fight, HotLoop, Lags, Leadership};
use crate::analyze::history::timeline::Row;
use crate::analyze::history::{Level, ObjectKey, clock, timestamp};
use crate::commands::check::render::Report as CheckView;
use crate::commands::owners::fetch::Scope;
use crate::output::table::{Grid, Styled, Table, Tone, styled};
use crate::output::{Printer, SCHEMA_VERSION};
use crate::source::audit::Summary as LogSummary;

/// What was read, for every report.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Log {
    pub inputs: Vec<String>,
    /// Decompressed bytes read.
    pub bytes: u64,
    /// Audit events read (every stage, every verb).
    pub events: u64,
    /// Events by the level they were logged at.
    pub levels: BTreeMap<String, u64>,
    /// The same request in more than one input, counted once.
    pub duplicates: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<jiff::Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<jiff::Timestamp>,
    /// Lines that could not be read, by why.
    pub skipped_lines: BTreeMap<String, SkippedLines>,
    /// Inputs (in a directory) that hold no audit event.
    pub not_audit_logs: Vec<String>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkippedLines {
    pub count: u64,
    /// Where the first one was (input:line).
    pub first: String,
}

impl Log {
    pub fn new(s: &LogSummary) -> Log {
        let mut skipped = BTreeMap::new();
        for (why, skip) in [
            ("notJson", &s.skipped.not_json),
            ("tooLong", &s.skipped.too_long),
            ("cutShort", &s.skipped.cut_short),
            ("unreadable", &s.skipped.unreadable),
        ] {
            if skip.count > 0 {
                skipped.insert(
                    why.to_string(),
                    SkippedLines { count: skip.count, first: skip.first.clone().unwrap_or_default() },
                );
            }
        }
        let levels = [Level::Metadata, Level::Request, Level::RequestResponse]
            .into_iter()
            .filter(|l| s.counts.by_level[*l as usize] > 0)
            .map(|l| (l.as_str().to_string(), s.counts.by_level[l as usize]))
            .collect();
        Log {
            inputs: s.inputs.clone(),
            bytes: s.bytes,
            events: s.counts.events,
            levels,
            duplicates: s.duplicates,
            first: s.first.map(timestamp),
            last: s.last.map(timestamp),
            skipped_lines: skipped,
            not_audit_logs: s.not_audit.clone(),
        }
    }
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectName {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    pub resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
}

/// The stable machine shape of `history TYPE/NAME -o json|yaml`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct History {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub object: ObjectName,
    pub log: Log,
    pub writes: Vec<WriteWire>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriterWire {
    /// What the history calls it: the field manager, else the program, with its account.
    pub label: String,
    pub user: String,
    pub program: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manager: Option<String>,
    /// The credential it presented (shortened): two instances of one program present two.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteWire {
    /// stageTimestamp: when the answer was written (microseconds).
    pub time: jiff::Timestamp,
    pub audit_id: String,
    pub verb: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
    /// The answer's HTTP code; 0 when the log has none.
    pub code: u16,
    pub writer: WriterWire,
    pub level: Level,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// The resourceVersion the writer sent (create and update).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_resource_version: Option<String>,
    /// The resourceVersion as stored (RequestResponse).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Field paths whose value this write changed (Request level and above; never values).
    pub changed: Vec<String>,
    /// Field paths sent with the value they had.
    pub unchanged: usize,
    /// Field paths an update no longer sent.
    pub removed: Vec<String>,
    /// No earlier write with a body in the log: `changed` is everything sent.
    pub first_seen: bool,
    /// The writer's managedFields entry in the stored object (RequestResponse).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_fields: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflict: Option<ConflictWire>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConflictWire {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_resource_version: Option<String>,
    /// Who wrote between the version held and this write.
    pub written_since: Vec<String>,
    /// Credentials of this same writer that wrote in between: another instance of it.
    pub other_instances: Vec<String>,
    /// Only its own writes landed in between: it wrote from a stale cache.
    pub stale_cache: bool,
    /// A create refused because the object existed.
    pub already_exists: bool,
}

impl History {
    pub fn new(key: &ObjectKey, summary: &LogSummary, rows: &[Row]) -> History {
        History {
            api_version: SCHEMA_VERSION,
            kind: "History",
            object: ObjectName {
                group: key.group.to_string(),
                resource: key.resource.to_string(),
                namespace: key.namespace.to_string(),
                name: key.name.to_string(),
            },
            log: Log::new(summary),
            writes: rows.iter().map(wire).collect(),
        }
    }
}

fn wire(row: &Row) -> WriteWire {
    let r = &row.request;
    let w = &row.what;
    let body = r.body.as_deref();
    WriteWire {
        time: timestamp(r.at),
        audit_id: r.audit_id.to_string(),
        verb: r.verb.map_or("", |v| v.as_str()).to_string(),
        subresource: r.subresource.to_string(),
        code: r.code,
        writer: WriterWire {
            label: r.writer.label(),
            user: r.writer.user.to_string(),
            program: r.writer.program.to_string(),
            manager: r.writer.manager.as_deref().map(str::to_string),
            credential: r.credential.as_deref().map(str::to_string),
        },
        level: r.level,
        dry_run: r.dry_run,
        held_resource_version: r.held.map(|v| v.to_string()),
        resource_version: r.stored.map(|v| v.to_string()),
        changed: w.changed.iter().map(|p| p.to_string()).collect(),
        unchanged: w.unchanged,
        removed: w.removed.iter().map(|p| p.to_string()).collect(),
        first_seen: w.first_seen,
        managed_fields: body.and_then(|b| b.managed.clone()),
        conflict: w.conflict.as_ref().map(|c| ConflictWire {
            held_resource_version: c.held.map(|v| v.to_string()),
            written_since: c.since.iter().map(|w| w.label()).collect(),
            other_instances: c.other_instances.iter().map(|c| c.to_string()).collect(),
            stale_cache: c.only_itself(&r.writer) && !c.exists,
            already_exists: c.exists,
        }),
    }
}

/// The table of one object's writes, a header line above it.
pub fn timeline_text(key: &ObjectKey, rows: &[Row], printer: &Printer) -> String {
    let place = if key.namespace.is_empty() { String::new() } else { format!(" in namespace {}", key.namespace) };
    let days = rows
        .first()
        .zip(rows.last())
        .is_some_and(|(a, b)| a.request.at / 86_400_000_000 != b.request.at / 86_400_000_000);
    let wide = printer.wide();
    let mut headers = vec!["TIME", "VERB", "SUBRESOURCE", "CODE", "WRITER", "WHAT"];
    if wide {
        headers.extend(["USER", "CREDENTIAL", "RESOURCEVERSION", "AUDIT ID"]);
    }
    let mut grid = Grid::new(headers);
    for row in rows {
        let r = &row.request;
        let code: Styled = match r.code {
            0 => "-".into(),
            c if (200..300).contains(&c) => c.to_string().into(),
            409 => styled("409", Tone::Warn),
            c => styled(c.to_string(), Tone::Bad),
        };
        let mut cells: Vec<Styled> = vec![
            clock(r.at, days).into(),
            format!("{}{}", r.verb.map_or("?", |v| v.as_str()), if r.dry_run { " (dry run)" } else { "" }).into(),
            r.subresource.to_string().into(),
            code,
            r.writer.label().into(),
            what(row).into(),
        ];
        if wide {
            let version = match (r.held, r.stored) {
                (Some(h), Some(s)) => format!("{h} -> {s}"),
                (Some(h), None) => format!("{h} ->"),
                (None, Some(s)) => format!("-> {s}"),
                (None, None) => String::new(),
            };
            cells.extend([
                r.writer.user.to_string().into(),
                r.credential.as_deref().unwrap_or_default().into(),
                version.into(),
                r.audit_id.to_string().into(),
            ]);
        }
        grid.row(cells);
    }
    let levels: Vec<String> = [Level::Metadata, Level::Request, Level::RequestResponse]
        .into_iter()
        .filter_map(|l| {
            let n = rows.iter().filter(|row| row.request.level == l).count();
            (n > 0).then(|| format!("{n} at {}", l.as_str()))
        })
        .collect();
    let mut lines = vec![format!(
        "{}{place}: {} in the audit log{}",
        key.label(),
        crate::output::counted(rows.len(), "write"),
        if levels.is_empty() { String::new() } else { format!(" ({})", levels.join(", ")) }
    )];
    if rows.iter().any(|r| r.request.level == Level::Metadata && r.request.ok()) {
        lines.push("Writes logged at Metadata level name no fields: the policy keeps no body for them.".into());
    }
    let header = crate::output::table::fit_lines(&lines.join("\n"), printer.width);
    let table = Table {
        grid,
        empty: Some(format!("No writes to {}{place} in the window read.", key.label())),
        lines: Vec::new(),
    };
    format!("{header}\n{}", table.render(printer))
}

/// The WHAT cell: what a write changed, or why it was refused.
fn what(row: &Row) -> String {
    let r = &row.request;
    let w = &row.what;
    if let Some(c) = &w.conflict {
        if c.exists {
            let by = c.since.first().map(|w| format!(" (created by {})", w.label())).unwrap_or_default();
            return format!("already exists{by}");
        }
        let held = c.held.map(|h| format!("held version {h}")).unwrap_or_else(|| "a patch".into());
        if !c.other_instances.is_empty() {
            return format!("conflict: {held}; another instance of it ({}) wrote since", c.other_instances.join(", "));
        }
        if c.only_itself(&r.writer) && !c.since.is_empty() {
            return format!("conflict: {held}; only its own writes since: a stale cache");
        }
        if c.since.is_empty() {
            return format!("conflict: {held}; no write since is in the log");
        }
        let names: Vec<String> = c.since.iter().map(|w| w.label()).collect();
        return format!("conflict: {held}; written since by {}", names.join(", "));
    }
    if !r.ok() {
        return String::new();
    }
    if r.verb == Some(crate::analyze::history::Verb::Delete) {
        return "deleted".into();
    }
    let mut parts = Vec::new();
    if !w.changed.is_empty() {
        const SHOWN: usize = 4;
        let mut named: Vec<&str> = w.changed.iter().take(SHOWN).map(|p| &**p).collect();
        let more = w.changed.len().saturating_sub(SHOWN);
        let extra = if more > 0 { format!(" and {more} more") } else { String::new() };
        let verb =
            if r.verb == Some(crate::analyze::history::Verb::Create) || w.first_seen { "set" } else { "changed" };
        named.sort_unstable();
        parts.push(format!("{verb} {}{extra}", named.join(", ")));
    }
    if !w.removed.is_empty() {
        parts.push(format!("removed {}", w.removed.iter().map(|p| &**p).collect::<Vec<_>>().join(", ")));
    }
    if parts.is_empty() && w.unchanged > 0 {
        parts.push(format!("no change ({} fields sent as they were)", w.unchanged));
    }
    if r.verb == Some(crate::analyze::history::Verb::Create) && parts.is_empty() {
        parts.push("created".into());
    }
    parts.join("; ")
}

/// The stable machine shape of `history --findings -o json|yaml`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryFindings<'a> {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub log: Log,
    /// Writes looked at, by the level they were logged at (Metadata, Request, RequestResponse).
    pub writes: u64,
    /// Objects written, by resource ("deployments.apps", "pods").
    pub objects_written: &'a std::collections::BTreeMap<String, usize>,
    /// Every finding at or above warning, as check reports it.
    pub findings: &'a [Finding],
    pub fights: &'a [Fight],
    pub conflicts: &'a [Conflicts],
    pub hot_loops: &'a [HotLoop],
    pub leadership: &'a [Leadership],
    /// Per resource written and writer that reacted: the time from a write of an object to
    /// that writer's first write of an object it owns.
    pub lags: &'a [Lags],
}

impl<'a> HistoryFindings<'a> {
    pub fn new(summary: &LogSummary, report: &'a findings::Report, found: &'a [Finding]) -> HistoryFindings<'a> {
        HistoryFindings {
            api_version: SCHEMA_VERSION,
            kind: "HistoryFindings",
            log: Log::new(summary),
            writes: report.writes,
            objects_written: &report.objects,
            findings: found,
            fights: &report.fights,
            conflicts: &report.conflicts,
            hot_loops: &report.hot_loops,
            leadership: &report.leadership,
            lags: &report.lags,
        }
    }
}

/// The findings as check shows them, then the reaction lags.
pub fn findings_text(
    summary: &LogSummary,
    report: &findings::Report,
    found: Vec<Finding>,
    scope: Scope,
    mut summaries: BTreeMap<Mechanism, Summary>,
    printer: &Printer,
) -> String {
    let history = summaries.entry(Mechanism::History).or_default();
    history.checked.extend(report.objects.iter().map(|(resource, n)| (resource.clone(), *n)));
    crate::analyze::check::tally(&mut summaries, &found);
    let view = CheckView {
        context: None,
        scope,
        server_time: summary.last.map(timestamp).unwrap_or(jiff::Timestamp::UNIX_EPOCH),
        min_severity: Severity::Warning,
        summaries,
        findings: found,
        silenced: Vec::new(),
        show_silenced: false,
        skipped: Vec::new(),
        accepted: Vec::new(),
        invalid: Vec::new(),
        notes: Vec::new(),
        not_covered: Vec::new(),
    };
    let window = match (report.first, report.last) {
        (Some(a), Some(b)) => {
            format!("{} to {}", clock(a.as_microsecond(), true), clock(b.as_microsecond(), true))
        }
        _ => "no writes".into(),
    };
    let mut text = crate::output::table::fit_lines(
        &format!(
            "Audit log {}: {window}, {} looked at.",
            inputs(&summary.inputs),
            crate::output::counted(report.writes as usize, "write")
        ),
        printer.width,
    );
    text.push('\n');
    text.push_str(&view.text(printer));
    if !report.lags.is_empty() {
        let mut grid = Grid::new(vec!["WRITTEN", "REACTED", "REACTIONS", "P50", "P90", "P99", "MAX"]);
        let ms = |m: u32| crate::age::precise(std::time::Duration::from_millis(u64::from(m)));
        for l in &report.lags {
            grid.row(vec![
                l.written.clone().into(),
                l.writer.clone().into(),
                l.reactions.to_string().into(),
                ms(l.p50_millis).into(),
                ms(l.p90_millis).into(),
                ms(l.p99_millis).into(),
                ms(l.max_millis).into(),
            ]);
        }
        text.push_str("\nReaction lags (from a write of an object to a writer's first write of an object it owns):\n");
        text.push_str(&grid.render(printer));
    }
    text
}

/// The inputs named in a header: two at most, the rest counted.
fn inputs(names: &[String]) -> String {
    match names {
        [] => "(none)".into(),
        [one] => one.clone(),
        [a, b] => format!("{a}, {b}"),
        [a, rest @ ..] => format!("{a} and {} more", rest.len()),
    }
}
