//! `kubectl coord history TYPE/NAME --audit-log PATH`: every write to one object, from the API
//! server's audit log, in time order; `--findings`: fights, conflicts, hot loops, leadership
//! and reaction lags over the log's window, cluster-wide or in -n's namespace. It reads the
//! log, never the cluster: it works where the log is, with no access to the cluster.

pub mod render;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;

use crate::analyze::check::{Mechanism, Severity, Summary};
use crate::analyze::history::findings::{self, Accumulator, Settings};
use crate::analyze::history::verdicts::{self, Naming};
use crate::analyze::history::{Micros, ObjectKey, Request, timeline};
use crate::analyze::resource_ref::{kind_offline, parse_args, resolve_offline};
use crate::cli::{ConnectionArgs, OutputFormat};
use crate::commands::owners::fetch::Scope;
use crate::connect::duration::duration_arg;
use crate::error::{Outcome, usage};
use crate::output::{Printer, out};
use crate::source::audit::{self, Summary as LogSummary, Want};

const LONG_ABOUT: &str = "\
Who wrote what and when, from the API server's audit log: every write to one object in time
order (millisecond times), with the writer (the field manager it named, its program, its user
or service account), the verb and subresource, the answer's code, what it changed where the
log's level says (Request and RequestResponse: field paths, never values), and for a write
refused with 409 Conflict the version it held and who wrote in between.

--findings lists, over the window, every object's fights (two writers changing the same field
in turn; at Metadata level the same part of an object, the weaker evidence), conflicts (409s
per writer), hot loops (a writer rewriting an object many times a minute, for minutes),
leadership (takeovers, renewal gaps, two holders in turn) and reaction lags (from a write of an
object to a controller's first write of an object it owns). `check --audit-log` adds the same
findings to every other analysis.

The log as people have it: the log backend's JSON lines (plain or gzip, rotated files, a
directory of them, - for stdin), the webhook backend's EventList batches, several API servers'
logs (merged by time, each request once), and log shippers' records that carry the event as a
JSON string (EKS's CloudWatch, Azure's diagnostic logs). No cluster is contacted.";

/// The audit log and the window read from it: `history` and `check --audit-log`.
#[derive(Debug, Clone, Args)]
pub struct WindowArgs {
    /// From this time on: a duration back from now (1h, 30m) or an RFC 3339 time
    #[arg(long, value_name = "DURATION|TIME", value_parser = moment_arg("--since"))]
    pub since: Option<Micros>,
    /// Up to this time: a duration back from now or an RFC 3339 time
    #[arg(long, value_name = "DURATION|TIME", value_parser = moment_arg("--until"))]
    pub until: Option<Micros>,
    /// Alternations between two writers that make a fight (CO601)
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub fight_min: u32,
    /// 409 Conflicts of one writer on one object that make a finding (CO602)
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub conflict_min: u32,
    /// Writes a minute by one writer to one object that make a minute hot (CO603)
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub hot_per_minute: u32,
    /// Hot minutes in a row that make a hot loop (CO603)
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub hot_minutes: u32,
    /// Takeovers of one Lease that make churn (CO604)
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub churn_min: u32,
    /// A reaction slower than this at the 90th percentile is slow (CO607)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration_arg("--slow-reaction"))]
    pub slow_reaction: Duration,
}

impl WindowArgs {
    pub fn settings(&self) -> Settings {
        Settings {
            fight_min: self.fight_min.max(1),
            conflict_min: self.conflict_min.max(1),
            hot_per_minute: self.hot_per_minute.max(1),
            hot_minutes: self.hot_minutes.max(1),
            churn_min: self.churn_min.max(1),
            slow_reaction: self.slow_reaction.as_micros() as Micros,
        }
    }
}

#[derive(Debug, Args)]
#[command(long_about = LONG_ABOUT)]
pub struct HistoryArgs {
    /// The object: TYPE/NAME or TYPE NAME (a built-in type by any of its names, or plural.group)
    #[arg(value_name = "TYPE/NAME")]
    pub object: Vec<String>,
    /// The API server's audit log: a file (plain or gzip), a directory of them, - for stdin
    /// (repeat for several API servers' logs)
    #[arg(long = "audit-log", value_name = "PATH", required = true)]
    pub audit_log: Vec<PathBuf>,
    /// The findings over the window, every object's (-n: one namespace's), not one object's writes
    #[arg(long)]
    pub findings: bool,
    /// With --findings: exit 3 when there are findings at or above warning
    #[arg(long)]
    pub exit_code: bool,
    /// Include reads and watches
    #[arg(long)]
    pub reads: bool,
    /// Include dry runs (dryRun=All)
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub window: WindowArgs,
}

/// A clap value parser for a moment: a duration back from now, or an RFC 3339 time.
pub fn moment_arg(flag: &'static str) -> impl Fn(&str) -> Result<Micros, String> + Clone + Send + Sync + 'static {
    move |text: &str| {
        let text = text.trim();
        if let Some(at) = audit::event::micros(text) {
            return Ok(at);
        }
        let back = crate::connect::duration::parse_duration(flag, text).map_err(|_| {
            format!("invalid {flag} {text:?}: expected a duration (30m, 1h, 2h30m) or an RFC 3339 time")
        })?;
        Ok(jiff::Timestamp::now().as_microsecond() - back.as_micros() as Micros)
    }
}

pub fn run(conn: &ConnectionArgs, printer: &Printer, args: &HistoryArgs) -> Result<Outcome> {
    if let (Some(since), Some(until)) = (args.window.since, args.window.until)
        && since > until
    {
        return Err(usage("--since is after --until"));
    }
    if args.findings {
        if !args.object.is_empty() {
            return Err(usage("--findings lists every object's findings: name no object (use -n for one namespace)"));
        }
        return findings_run(conn, printer, args);
    }
    if args.exit_code {
        return Err(usage("--exit-code goes with --findings"));
    }
    let parsed = parse_args(&args.object).map_err(usage)?;
    let [object] = parsed.as_slice() else {
        return Err(usage("history shows one object: give one TYPE/NAME (or --findings for all)"));
    };
    let resource = resolve_offline(&object.type_name);
    let namespace =
        if resource.namespaced { crate::connect::kubeconfig::offline_namespace(conn) } else { String::new() };
    let key = ObjectKey {
        group: resource.group.as_str().into(),
        resource: resource.plural.as_str().into(),
        namespace: namespace.as_str().into(),
        name: object.name.as_str().into(),
    };
    let want = Want {
        reads: args.reads,
        dry_run: args.dry_run,
        object: Some(key.clone()),
        since: args.window.since,
        until: args.window.until,
        bodies: true,
    };
    let mut requests: Vec<Request> = Vec::new();
    let summary = audit::read(&args.audit_log, &want, |r| requests.push(r)).map_err(usage)?;
    let rows = timeline::rows(requests);
    let report = render::History::new(&key, &summary, &rows);
    if printer.is_machine() {
        printer.machine(&report)?;
    } else {
        out(&render::timeline_text(&key, &rows, printer))?;
    }
    warn_about(printer, &summary, rows.is_empty().then_some(&key));
    Ok(Outcome::Clean)
}

/// The findings over the window, one namespace's when -n was given.
fn findings_run(conn: &ConnectionArgs, printer: &Printer, args: &HistoryArgs) -> Result<Outcome> {
    let only = conn.namespace.clone().filter(|_| !conn.all_namespaces);
    let (summary, report) = window_findings(&args.audit_log, &args.window, only.as_deref(), |_| {})?;
    let log_args = log_args(&args.audit_log);
    let naming = Naming { kind_of: &kind_offline, log_args: &log_args };
    let found = verdicts::findings(&report, &naming);
    let shown: Vec<_> = found.into_iter().filter(|f| f.severity >= Severity::Warning).collect();
    let has_findings = !shown.is_empty();
    if printer.is_machine() {
        printer.machine(&render::HistoryFindings::new(&summary, &report, &shown))?;
    } else {
        let scope = match &only {
            Some(ns) => Scope::Namespace(ns.clone()),
            None => Scope::AllNamespaces,
        };
        let mut summaries = std::collections::BTreeMap::new();
        summaries.insert(Mechanism::History, Summary::default());
        out(&render::findings_text(&summary, &report, shown, scope, summaries, printer))?;
    }
    warn_about(printer, &summary, None);
    Ok(if args.exit_code && has_findings { Outcome::Findings } else { Outcome::Clean })
}

/// Reads the log's writes into the findings (in `namespace` only, when given); `observe` sees
/// each request too (trace's and check's own uses). Lease durations and owners known from the
/// live cluster can be handed in through [`window_findings_with`].
pub fn window_findings(
    paths: &[PathBuf],
    window: &WindowArgs,
    namespace: Option<&str>,
    observe: impl FnMut(&Request),
) -> Result<(LogSummary, findings::Report)> {
    window_findings_with(paths, window, namespace, Accumulator::new(window.settings()), observe)
}

pub fn window_findings_with(
    paths: &[PathBuf],
    window: &WindowArgs,
    namespace: Option<&str>,
    mut acc: Accumulator,
    mut observe: impl FnMut(&Request),
) -> Result<(LogSummary, findings::Report)> {
    let want = Want { since: window.since, until: window.until, bodies: true, ..Want::default() };
    let summary = audit::read(paths, &want, |r| {
        if namespace.is_none_or(|ns| *r.object.namespace == *ns) {
            observe(&r);
            acc.observe(&r);
        }
    })
    .map_err(usage)?;
    Ok((summary, acc.finish()))
}

/// The `--audit-log` arguments as a detail command repeats them.
pub fn log_args(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| format!("--audit-log {}", p.display())).collect::<Vec<_>>().join(" ")
}

/// What could not be read, and why nothing may have been shown, on stderr.
pub fn warn_about(printer: &Printer, summary: &LogSummary, nothing_for: Option<&ObjectKey>) {
    if let Some(line) = summary.skipped.line() {
        printer.warn(&line);
    }
    if !summary.not_audit.is_empty() {
        printer.warn(&format!("skipped, not an audit log: {}", summary.not_audit.join(", ")));
    }
    if summary.counts.events > 0 && summary.counts.events == summary.counts.earlier_stages {
        printer.warn("the log holds only RequestReceived or ResponseStarted stages: no request's answer is in it");
    }
    if let Some(key) = nothing_for {
        let span = match (summary.first, summary.last) {
            (Some(a), Some(b)) => format!(
                " (its events run from {} to {})",
                crate::analyze::history::clock(a, true),
                crate::analyze::history::clock(b, true)
            ),
            _ => String::new(),
        };
        let place = if key.namespace.is_empty() { String::new() } else { format!(" in namespace {}", key.namespace) };
        printer.warn(&format!("no write to {}{place} in the audit log{span}", key.label()));
    }
}

/// Whether -o is one `history` prints.
pub fn format_supported(format: OutputFormat) -> bool {
    matches!(format, OutputFormat::Table | OutputFormat::Wide | OutputFormat::Json | OutputFormat::Yaml)
}
