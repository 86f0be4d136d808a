//! `kubectl coord check`: every analysis in one run over lists read once, as one
//! findings list by severity, for people (table), scripts (json/yaml) and CI (junit).

pub mod dump;
mod fetch;
mod files;
mod from;
mod history;
pub(crate) mod render;
mod whole;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use jiff::Timestamp;

use crate::analyze::check::{self, Finding, Mechanism, Severity, StallForest, Summary};
use crate::analyze::chunked::Chunked;
use crate::analyze::lease::LeaseSnapshot;
use crate::analyze::lease_report::{self, LeaseRow};
use crate::analyze::overlap::{self, Options};
use crate::analyze::owner_graph::{self, Graph, Object};
use crate::analyze::sequence::{TraceObject, TraceSnapshot};
use crate::analyze::silence::{Accepted, Rules};
use crate::analyze::stall::{LeaseKey, LeaseLookup, LeaseVerdict, Stall, judge, lease_for_manager, stalls_kept};
use crate::cli::{ConnectionArgs, FleetArgs, OutputFormat};
use crate::commands::fleet::{self, Rendered};
use crate::commands::owners::fetch::{Scope, Skipped};
use crate::connect::duration::duration_arg;
use crate::connect::{Session, discovery};
use crate::error::{Outcome, usage};
use crate::output::Printer;
use crate::output::table::{Grid, Table};

const LONG_ABOUT: &str = "\
Run every analysis at once and list what it finds, most severe first, each finding with the
command that shows its detail:

  leases    expired, at-risk and skewed leases, holder pods that are gone, released
            control-plane leases (no leader), LeaseCandidate disagreements
  owners    dangling and invalid ownerReferences, cycles, objects stuck in deletion
  overlaps  controllers of one kind whose selectors overlap; pods under several PDBs
  fields    objects whose fields several managers fight over (the fields census)
  trace     chains that stall: a generation not observed, replicas short, pods with no node,
            each joined with the responsible controller's lease

Each list is read once and shared: controllers, PDBs, Leases and LeaseCandidates whole, every
other type (pods included) metadata-only, plus the pods with no node. --only and --skip leave out
the lists only the skipped mechanisms need. Pod-level stalls beyond scheduling (a kubelet that
never reported) need each pod's status: `kubectl coord trace` shows them.

Severity:
  error    broken now: no leader, a stalled chain, pods two controllers count, a misfiring cascade
  warning  breaks now and then or will: late renewals, logical overlaps, fighting writers
  info     worth knowing (an API server identity lease not yet collected, a status written
           through the main resource)";

#[derive(Debug, Args)]
#[command(long_about = LONG_ABOUT)]
pub struct CheckArgs {
    /// Only these mechanisms (comma-separated)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "MECHANISM", conflicts_with = "skip")]
    pub only: Vec<Mechanism>,
    /// Leave out these mechanisms (comma-separated)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "MECHANISM")]
    pub skip: Vec<Mechanism>,
    /// Show (and count for --exit-code) findings at or above this severity
    #[arg(long, value_enum, value_name = "SEVERITY", default_value_t = Severity::Warning)]
    pub min_severity: Severity,
    /// Exit 3 when any finding at or above --min-severity is reported (silenced ones aside),
    /// else 4 when something in scope could not be read
    #[arg(long)]
    pub exit_code: bool,
    /// Findings a team has accepted, and types known to be unreadable (YAML; see docs/check.md)
    #[arg(long, value_name = "FILE")]
    pub ignore_file: Option<std::path::PathBuf>,
    /// List the silenced findings too, each with what silenced it and why
    #[arg(long)]
    pub show_silenced: bool,
    /// Work outstanding for longer than this is a stall (trace)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration_arg("--stall-after"))]
    pub stall_after: Duration,
    /// An object deleting for longer than this, with finalizers left, is stuck (owners)
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = duration_arg("--stuck-after"))]
    pub stuck_after: Duration,
    /// The API server's audit log (a file, gzip, a directory, - for stdin; repeatable): adds
    /// the history mechanism's findings over its window (fights, conflicts, hot loops, leadership)
    #[arg(long = "audit-log", value_name = "PATH")]
    pub audit_log: Vec<std::path::PathBuf>,
    #[command(flatten)]
    pub window: crate::commands::history::WindowArgs,
    /// Manifests to check before applying them, as kubectl apply -f takes them: a file, a
    /// directory, - for stdin (repeatable). Reports only what involves their objects
    #[arg(short = 'f', long = "filename", value_name = "FILE|DIR|-", conflicts_with = "audit_log")]
    pub filename: Vec<std::path::PathBuf>,
    /// With -f: also the directories under a directory
    #[arg(short = 'R', long, requires = "filename")]
    pub recursive: bool,
    /// A kustomization directory to check before applying it (built with `kubectl kustomize`)
    #[arg(short = 'k', long = "kustomize", value_name = "DIR", conflicts_with_all = ["filename", "audit_log"])]
    pub kustomize: Option<std::path::PathBuf>,
    /// With -f or -k: check the files' objects against each other only, without a cluster
    #[arg(long)]
    pub offline: bool,
    /// With -f or -k: the field manager the apply will write as (default: kubectl's, server-
    /// and client-side); fields others own that the files change are reported
    #[arg(long, value_name = "NAME")]
    pub field_manager: Option<String>,
    /// With -f or -k: ask the server which fields the apply would take (a server-side apply as
    /// a dry run: nothing is written) where you may patch; elsewhere managedFields answer
    #[arg(long)]
    pub server_dry_run: bool,
    /// Check a dump instead of the cluster, as of when it was taken: `kubectl coord dump`'s
    /// file (- for stdin). Mechanisms the dump cannot feed are listed as not covered
    #[arg(long, value_name = "PATH", conflicts_with_all = ["filename", "kustomize", "offline"])]
    pub from: Option<std::path::PathBuf>,
}

/// Which mechanisms run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Plan {
    pub leases: bool,
    pub owners: bool,
    pub overlaps: bool,
    pub fields: bool,
    pub trace: bool,
    /// Read the audit log (check --audit-log).
    pub history: bool,
    /// Keep objects' labels for silencing (an ignore rule has a selector).
    pub marks_labels: bool,
}

impl Plan {
    pub fn from_args(only: &[Mechanism], skip: &[Mechanism]) -> Plan {
        let on = |m: Mechanism| if only.is_empty() { !skip.contains(&m) } else { only.contains(&m) };
        Plan {
            leases: on(Mechanism::Leases),
            owners: on(Mechanism::Owners),
            overlaps: on(Mechanism::Overlaps),
            fields: on(Mechanism::Fields),
            trace: on(Mechanism::Trace),
            history: on(Mechanism::History),
            marks_labels: false,
        }
    }

    pub fn runs(&self, m: Mechanism) -> bool {
        match m {
            Mechanism::Leases => self.leases,
            Mechanism::Owners => self.owners,
            Mechanism::Overlaps => self.overlaps,
            Mechanism::Fields => self.fields,
            Mechanism::Trace => self.trace,
            Mechanism::History => self.history,
        }
    }
}

pub async fn run(conn: &ConnectionArgs, fleet: &FleetArgs, printer: &Printer, args: &CheckArgs) -> Result<Outcome> {
    let mut plan = Plan::from_args(&args.only, &args.skip);
    if args.only.contains(&Mechanism::History) && args.audit_log.is_empty() {
        return Err(usage("the history mechanism reads an audit log: give --audit-log PATH"));
    }
    // The audit log's findings run only when there is a log to read.
    plan.history &= !args.audit_log.is_empty();
    if !Mechanism::ALL.iter().any(|&m| plan.runs(m)) {
        return Err(usage("--skip leaves no mechanism to check"));
    }
    let rules = read_rules(args.ignore_file.as_deref())?;
    plan.marks_labels = rules.wants_labels();
    let rules = &rules;
    let manifests = files::read(args)?;
    if args.offline && manifests.is_none() {
        return Err(usage("--offline checks files alone: give -f FILE or -k DIR"));
    }
    let manifests = manifests.as_ref();
    if let Some(manifests) = manifests {
        for line in &manifests.skipped {
            printer.warn(&format!("skipped {line}"));
        }
    }
    if let Some(path) = &args.from {
        // -n narrows a dump of several namespaces to one; without it the dump's own scope is
        // checked (not the context's namespace: the dump may come from anywhere).
        let narrow = conn.namespace.as_deref().filter(|_| !conn.all_namespaces);
        let report = from::collect(path, narrow, printer, args, plan, rules).await?;
        return fleet::print_one(rendered(report, printer, false)?, printer, args.exit_code);
    }
    if args.offline {
        let namespace = crate::connect::kubeconfig::offline_namespace(conn);
        let manifests = manifests.expect("checked above");
        let report = collect_files(None, printer, &namespace, args, plan, rules, manifests).await?;
        return fleet::print_one(rendered(report, printer, false)?, printer, args.exit_code);
    }
    let in_fleet = fleet.active();
    fleet::run(conn, fleet, printer, args.exit_code, |session| async move {
        let report = match manifests {
            Some(manifests) => {
                let namespace = session.namespace.clone();
                collect_files(Some(&session), printer, &namespace, args, plan, rules, manifests).await?
            }
            None => collect(&session, printer, args, plan, rules).await?,
        };
        rendered(report, printer, in_fleet)
    })
    .await
}

/// A report as printed: a table, a machine document or JUnit.
fn rendered(mut report: render::Report, printer: &Printer, in_fleet: bool) -> Result<Rendered> {
    let (warnings, found) = (report.warnings(), !report.findings.is_empty());
    let incomplete = !report.complete();
    let mut rendered = match printer.format {
        OutputFormat::Table | OutputFormat::Wide => {
            let table = report.take_table(printer, !in_fleet && printer.format == OutputFormat::Table);
            Rendered::new(printer, &(), || table)?
        }
        // Not called: no table is printed in these formats.
        _ => Rendered::new(printer, &report.machine(), || Table::new(Grid::new(Vec::new())))?,
    };
    rendered.warnings = warnings;
    rendered.findings = found;
    rendered.incomplete = incomplete;
    let prefix = if in_fleet { report.context.as_deref() } else { None };
    if printer.format == OutputFormat::Junit {
        rendered.junit = Some(report.junit_suites(prefix));
    }
    super::drop_later(report);
    Ok(rendered)
}

/// check -f / -k: the files laid over what `session` reads (nothing with --offline), the
/// findings that involve their objects.
async fn collect_files(
    session: Option<&Session>,
    printer: &Printer,
    namespace: &str,
    args: &CheckArgs,
    asked: Plan,
    rules: &Rules,
    manifests: &crate::source::files::Manifests,
) -> Result<render::Report> {
    let offline = session.is_none();
    let plan = files::plan(asked, offline);
    let all = session.is_some_and(|s| s.all_namespaces);
    let scope = if all { Scope::AllNamespaces } else { Scope::Namespace(namespace.to_string()) };
    let in_scope = |ns: &str| offline || all || ns == namespace;
    let (mut snap, resources) = match session {
        Some(session) => {
            let read = async {
                let resources = discovery::discover(&session.conn).await?;
                // The census is not needed: the files' objects are compared one by one below.
                let lists = Plan { fields: false, ..plan };
                let mut snap = fetch::snapshot(session, &resources, &scope, &lists).await?;
                snap.skipped.extend(resources.skipped());
                anyhow::Ok((snap, resources.resources))
            };
            session.checking_namespace(read).await?
        }
        None => (fetch::Snapshot::default(), Vec::new()),
    };
    let now = snap.server_time.unwrap_or_else(Timestamp::now);
    let laid = tokio::task::block_in_place(|| {
        files::analyze(&mut snap, manifests, &resources, namespace, &in_scope, &plan, args.stuck_after.as_secs() as i64)
    });
    let mut found = laid.findings;
    let mut summaries: BTreeMap<Mechanism, Summary> = BTreeMap::new();
    add_counts(&mut summaries, laid.counts);
    if let (Some(session), true) = (session, plan.fields) {
        let manager = args.field_manager.as_deref();
        let takes =
            files::apply_takes(session, manifests, &resources, namespace, &in_scope, manager, args.server_dry_run)
                .await;
        found.extend(takes.findings);
        snap.skipped.extend(takes.skipped);
        add_counts(&mut summaries, takes.counts);
        for w in takes.warnings {
            printer.warn(&w);
        }
    }
    let mut notes = laid.notes;
    if asked.leases || asked.trace {
        notes.push(files::NOT_RUN.to_string());
    }
    let ending = Ending {
        context: session.and_then(|s| s.context.clone()),
        scope,
        now,
        summaries,
        found,
        notes,
        not_covered: files::not_covered(asked, offline),
    };
    Ok(ending.report(args, &plan, rules, &mut snap))
}

/// What a run found, before the report: selected by severity, silenced, counted.
struct Ending {
    context: Option<String>,
    scope: Scope,
    now: Timestamp,
    summaries: BTreeMap<Mechanism, Summary>,
    found: Vec<Finding>,
    notes: Vec<String>,
    not_covered: Vec<check::NotCovered>,
}

impl Ending {
    fn report(self, args: &CheckArgs, plan: &Plan, rules: &Rules, snap: &mut fetch::Snapshot) -> render::Report {
        let mut summaries = self.summaries;
        let (findings, silenced) = rules.apply(check::select(self.found, args.min_severity), &snap.marks);
        check::tally(&mut summaries, &findings);
        let (skipped, accepted) = accept_unreadable(rules, std::mem::take(&mut snap.skipped));
        for m in Mechanism::ALL.into_iter().filter(|&m| plan.runs(m)) {
            summaries.entry(m).or_default();
        }
        render::Report {
            context: self.context,
            scope: self.scope,
            server_time: self.now,
            min_severity: args.min_severity,
            summaries,
            findings,
            silenced,
            show_silenced: args.show_silenced,
            skipped,
            accepted,
            invalid: std::mem::take(&mut snap.invalid),
            notes: self.notes,
            not_covered: self.not_covered,
        }
    }
}

/// The ignore file's rules (none without one); a file that cannot be read or is not valid
/// is bad input (exit 2), named in one line.
pub fn read_rules(path: Option<&std::path::Path>) -> Result<Rules> {
    let Some(path) = path else { return Ok(Rules::default()) };
    let text = std::fs::read_to_string(path).map_err(|e| usage(format!("--ignore-file {}: {e}", path.display())))?;
    Rules::parse(&text).map_err(|e| usage(format!("--ignore-file {}: {e}", path.display())))
}

/// Reads and analyzes one cluster (the session's context).
pub async fn collect(
    session: &Session,
    printer: &Printer,
    args: &CheckArgs,
    plan: Plan,
    rules: &Rules,
) -> Result<render::Report> {
    let read = async {
        let resources = discovery::discover(&session.conn).await?;
        let scope =
            if session.all_namespaces { Scope::AllNamespaces } else { Scope::Namespace(session.namespace.clone()) };
        let mut snap = fetch::snapshot(session, &resources, &scope, &plan).await?;
        snap.skipped.extend(resources.skipped());
        anyhow::Ok((snap, scope, resources.resources))
    };
    let (snap, scope, resources) = session.checking_namespace(read).await?;
    let now = snap.server_time.unwrap_or_else(|| {
        printer.warn("the API server sent no Date header; ages use the local clock");
        Timestamp::now()
    });
    let read = Read { session: Some(session), context: session.context.clone(), snap, scope, resources, now };
    analyzed(read, args, plan, rules, Vec::new()).await
}

/// A snapshot read, from the cluster (`session`) or from a dump (None).
struct Read<'a> {
    session: Option<&'a Session>,
    context: Option<String>,
    snap: fetch::Snapshot,
    scope: Scope,
    resources: Vec<crate::analyze::resource_ref::ApiResource>,
    /// The clock ages are judged by: the server's, or the dump's capture time.
    now: Timestamp,
}

/// Every planned analysis over what was read.
async fn analyzed(
    read: Read<'_>,
    args: &CheckArgs,
    plan: Plan,
    rules: &Rules,
    not_covered: Vec<check::NotCovered>,
) -> Result<render::Report> {
    let Read { session, context, mut snap, scope, resources, now } = read;
    let mut summaries: BTreeMap<Mechanism, Summary> = BTreeMap::new();
    // The owner graph, leases, owners and the search for stalls on one thread, overlaps and
    // fields on another: tens of thousands of objects take a few hundred milliseconds each side.
    let stuck_after = args.stuck_after.as_secs() as i64;
    let objects = std::mem::take(&mut snap.objects);
    let workloads = std::mem::take(&mut snap.workloads);
    let pods = std::mem::take(&mut snap.pods);
    let (first, second, traced, hints) = tokio::task::block_in_place(|| {
        std::thread::scope(|threads| {
            let other = threads.spawn(|| {
                let mut part = Part::default();
                if plan.overlaps {
                    let pods = fetch::flatten(pods);
                    overlap_part(&snap, &pods, &mut part);
                    super::drop_later(pods);
                }
                if plan.fields {
                    fields_part(&snap, &mut part);
                }
                part
            });
            let graph = Graph::build(objects, &snap.coverage);
            let hints = plan.history.then(|| history::hints(&snap.leases, &graph, &resources));
            let mut part = Part::default();
            if plan.leases {
                lease_part(&snap, &graph, now, &mut part);
            }
            if plan.owners {
                owner_part(&snap, &graph, stuck_after, &mut part);
            }
            let traced = plan.trace.then(|| {
                let (forest, stalls) = stall_part(&snap, workloads, &graph.objects, now, args.stall_after, &mut part);
                let lookups = lease_lookups(&snap, &stalls, &scope);
                if lookups.missing.is_empty() {
                    part.add(judged_stalls(&forest, &stalls, &lookups.found, now));
                    super::drop_later((forest, stalls));
                    return None;
                }
                Some((forest, stalls, lookups))
            });
            super::drop_later(graph);
            (part, other.join().unwrap_or_else(|e| std::panic::resume_unwind(e)), traced, hints)
        })
    });
    let mut found: Vec<Finding> = Vec::new();
    for part in [first, second] {
        add_counts(&mut summaries, part.counts);
        fetch::join(&mut found, part.findings);
    }
    if let Some((forest, stalls, lookups)) = traced.flatten() {
        found.extend(trace_findings(session, &forest, &stalls, lookups, now).await);
        super::drop_later((forest, stalls));
    }
    let mut log_notes = Vec::new();
    if let Some(hints) = hints {
        let namespace = match &scope {
            Scope::Namespace(ns) => Some(ns.as_str()),
            Scope::AllNamespaces => None,
        };
        let read = tokio::task::block_in_place(|| history::findings(args, hints, namespace, &resources))?;
        add_counts(&mut summaries, read.objects.iter().map(|(resource, n)| (Mechanism::History, resource.clone(), *n)));
        fetch::join(&mut found, read.findings);
        snap.skipped.extend(read.skipped);
        log_notes = read.notes;
    }
    let ending = Ending { context, scope, now, summaries, found, notes: log_notes, not_covered };
    let report = ending.report(args, &plan, rules, &mut snap);
    super::drop_later(snap);
    Ok(report)
}

/// Splits what could not be read into what counts against completeness and what the ignore
/// file accepts as known to be unreadable.
fn accept_unreadable(rules: &Rules, skipped: Vec<Skipped>) -> (Vec<Skipped>, Vec<Accepted>) {
    let mut kept = Vec::new();
    let mut accepted = Vec::new();
    for s in skipped {
        match rules.accepts_unreadable(&s.resource) {
            Some(why) => accepted.push(Accepted {
                resource: s.resource,
                namespace: s.namespace,
                reason: s.reason,
                why: why.to_string(),
            }),
            None => kept.push(s),
        }
    }
    (kept, accepted)
}

/// The objects each mechanism checked, by kind: (mechanism, kind, how many).
pub(super) type Counts = Vec<(Mechanism, String, usize)>;

/// Adds `kinds`' objects to `counts`, counted by kind.
pub(super) fn count_by_kind<'a>(counts: &mut Counts, m: Mechanism, kinds: impl IntoIterator<Item = &'a str>) {
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for kind in kinds {
        *by_kind.entry(kind).or_default() += 1;
    }
    counts.extend(by_kind.into_iter().map(|(k, n)| (m, k.to_string(), n)));
}

/// Adds counts to the summaries' objects checked.
fn add_counts(
    summaries: &mut BTreeMap<Mechanism, Summary>,
    counts: impl IntoIterator<Item = (Mechanism, String, usize)>,
) {
    for (m, kind, n) in counts {
        *summaries.entry(m).or_default().checked.entry(kind).or_default() += n;
    }
}

/// One thread's share of the analyses: findings and how many objects of each kind it checked.
#[derive(Default)]
struct Part {
    findings: Vec<Finding>,
    counts: Counts,
}

impl Part {
    /// Adds findings, moving rather than copying the larger share: overlaps alone can make
    /// tens of thousands.
    fn add(&mut self, findings: Vec<Finding>) {
        fetch::join(&mut self.findings, findings);
    }

    /// Counts the objects `m` checked, by kind.
    fn count_kinds<'a>(&mut self, m: Mechanism, kinds: impl IntoIterator<Item = &'a str>) {
        count_by_kind(&mut self.counts, m, kinds);
    }
}

fn lease_part(snap: &fetch::Snapshot, graph: &Graph, now: Timestamp, part: &mut Part) {
    let rows = lease_rows(snap, graph, now);
    part.counts.push((Mechanism::Leases, "Lease".into(), rows.len()));
    if !snap.candidates.is_empty() {
        part.counts.push((Mechanism::Leases, "LeaseCandidate".into(), snap.candidates.len()));
    }
    part.add(check::leases(&rows, &lease_report::findings(&rows)));
    part.add(check::leaderless(&rows));
}

fn owner_part(snap: &fetch::Snapshot, graph: &Graph, stuck_after: i64, part: &mut Part) {
    part.count_kinds(Mechanism::Owners, graph.objects.iter().map(|o| &*o.kind));
    let everything: Vec<usize> = (0..graph.objects.len()).collect();
    let owner_findings = owner_graph::findings(graph, &everything, snap.server_time, stuck_after);
    part.add(check::owners(graph, &owner_findings));
}

fn overlap_part(snap: &fetch::Snapshot, pods: &[overlap::PodMeta], part: &mut Part) {
    part.count_kinds(Mechanism::Overlaps, snap.controllers.iter().map(|c| c.kind.as_str()));
    part.counts.push((Mechanism::Overlaps, "Pod".into(), pods.len()));
    let analysis =
        overlap::analyze(&snap.controllers, pods, &Options { cross_kind: false, explain: false, sample: false });
    part.add(check::overlaps(&analysis));
}

fn fields_part(snap: &fetch::Snapshot, part: &mut Part) {
    for (kind, n) in &snap.census_checked {
        part.counts.push((Mechanism::Fields, kind.clone(), *n));
    }
    let groups: BTreeMap<&str, &str> =
        crate::commands::fields::census::DEFAULT_KINDS.iter().map(|(group, _, _, kind)| (*kind, *group)).collect();
    part.add(check::fields(snap.census.contested.iter().map(|o| {
        let group = groups.get(&*o.kind).copied().unwrap_or("");
        (&*o.kind, group, o.namespace.as_str(), o.name.as_str(), o.contests.as_slice())
    })));
}

fn lease_rows(snap: &fetch::Snapshot, graph: &Graph, now: Timestamp) -> Vec<LeaseRow> {
    let replicas = |uid: &str| snap.replicas.get(uid).copied();
    let mut rows: Vec<LeaseRow> = snap
        .leases
        .iter()
        .map(|l| {
            let pod = lease_report::wants_holder_pod(l).map(|p| {
                let read = snap.coverage.covers("", "Pod", Some(&l.namespace));
                check::holder_pod(graph, &l.namespace, p, read, &replicas)
            });
            let cands = snap
                .candidates
                .iter()
                .filter(|c| c.namespace == l.namespace && c.lease_name == l.name)
                .cloned()
                .collect();
            lease_report::row(l, now, pod, cands)
        })
        .collect();
    rows.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    rows
}

/// The stalls in the controllers and pods in scope (pure), counting what was searched.
fn stall_part(
    snap: &fetch::Snapshot,
    workloads: fetch::Pages<TraceObject>,
    objects: &Chunked<Object>,
    now: Timestamp,
    stall_after: Duration,
    part: &mut Part,
) -> (TraceSnapshot, Vec<Stall>) {
    let StallForest { forest, live_pods, pods } =
        check::stall_forest(fetch::flatten(workloads), objects, &snap.unscheduled);
    part.count_kinds(Mechanism::Trace, forest.objects.iter().map(|o| &*o.kind).filter(|&k| k != "Pod"));
    if pods > 0 {
        part.counts.push((Mechanism::Trace, "Pod".into(), pods));
    }
    let keep = |o: &TraceObject, kind| check::keep_stall(o, kind, &snap.unscheduled);
    let found = stalls_kept(&forest, &live_pods, now, stall_after.as_secs() as i64, keep);
    (forest, found)
}

/// The leases the stalls name, as far as the lists read cover them (pure); the keys they do
/// not cover are read afterwards ([`trace_findings`]).
#[derive(Default)]
struct Lookups {
    found: BTreeMap<LeaseKey, LeaseLookup>,
    missing: BTreeSet<LeaseKey>,
}

/// Each stall joined with its controller's lease, reading the leases the lists did not
/// cover. When they covered all (the usual case) the findings were already made, on the
/// analyses' thread.
async fn trace_findings(
    session: Option<&Session>,
    forest: &TraceSnapshot,
    found: &[Stall],
    mut lookups: Lookups,
    now: Timestamp,
) -> Vec<Finding> {
    let missing = std::mem::take(&mut lookups.missing);
    match session {
        Some(session) => lookups.found.extend(crate::commands::trace::fetch::leases(session, missing).await),
        // A dump holds what it holds.
        None => {
            lookups.found.extend(missing.into_iter().map(|k| (k, LeaseLookup::Unreadable("not in the dump".into()))))
        }
    }
    judged_stalls(forest, found, &lookups.found, now)
}

fn lease_lookups(snap: &fetch::Snapshot, found: &[Stall], scope: &Scope) -> Lookups {
    let listed_covers = |key: &LeaseKey| {
        snap.leases_listed
            && match (key, scope) {
                (_, Scope::AllNamespaces) => true,
                (LeaseKey::Named { namespace, .. }, Scope::Namespace(ns)) => namespace == ns,
                (LeaseKey::Manager { .. }, Scope::Namespace(_)) => false,
            }
    };
    let lookup = |key: &LeaseKey, leases: &[LeaseSnapshot]| match key {
        LeaseKey::Named { namespace, name } => {
            leases.iter().find(|l| &l.namespace == namespace && &l.name == name).cloned()
        }
        LeaseKey::Manager { manager } => lease_for_manager(manager, leases).cloned(),
    };
    let mut lookups = Lookups::default();
    // Thousands of stalls name a handful of leases (most often the scheduler's): each once.
    let keys: BTreeSet<LeaseKey> = found.iter().filter_map(|s| s.responsible.lease.clone()).collect();
    for key in keys {
        // Some(found or not) when a list read covers the key; None when it must be read.
        let hit = if listed_covers(&key) {
            Some(lookup(&key, &snap.leases))
        } else {
            match (&key, &snap.system_leases) {
                (LeaseKey::Named { namespace, .. }, Some(system)) if namespace == fetch::SYSTEM => {
                    Some(lookup(&key, system))
                }
                // A manager's lease outside kube-system is still found by the full read below.
                (LeaseKey::Manager { .. }, Some(system)) => lookup(&key, system).map(Some),
                _ => None,
            }
        };
        match hit {
            Some(lease) => {
                lookups.found.insert(key, lease.map_or(LeaseLookup::Missing, |l| LeaseLookup::Found(Box::new(l))));
            }
            None => {
                lookups.missing.insert(key);
            }
        }
    }
    lookups
}

/// The stalls a lease verdict confirms, as findings (pure).
fn judged_stalls(
    forest: &TraceSnapshot,
    found: &[Stall],
    lookups: &BTreeMap<LeaseKey, LeaseLookup>,
    now: Timestamp,
) -> Vec<Finding> {
    // A verdict depends on the lease and on whether the stall has evidence, nothing else of
    // it: ten thousand pods with no node share one verdict, judged once.
    let mut verdicts: BTreeMap<(&LeaseKey, bool), LeaseVerdict> = BTreeMap::new();
    for stall in found {
        if let Some(key) = &stall.responsible.lease
            && let Some(lookup) = lookups.get(key)
        {
            verdicts.entry((key, stall.evidence.is_empty())).or_insert_with(|| judge(stall, lookup, now));
        }
    }
    let judged: Vec<_> = found
        .iter()
        .map(|stall| {
            let verdict = stall.responsible.lease.as_ref().and_then(|k| verdicts.get(&(k, stall.evidence.is_empty())));
            (stall, verdict)
        })
        .filter(|(stall, verdict)| crate::analyze::stall::confirmed(stall, *verdict))
        .collect();
    check::stalls(forest, &judged)
}
