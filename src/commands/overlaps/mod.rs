//! `kubectl coord overlaps`: exact selector overlap between controllers, with proof.

pub(crate) mod fetch;
pub(crate) mod files;
pub(crate) mod render;

use anyhow::Result;
use clap::{Args, ValueEnum};

use crate::analyze::overlap::{self, Options, Severity};
use crate::cli::{ConnectionArgs, FleetArgs};
use crate::commands::fleet::{self, Rendered};
use crate::connect::Session;
use crate::error::{Outcome, usage};
use crate::output::{Printer, SCHEMA_VERSION};
use render::{OverlapReport, table};

const LONG_ABOUT: &str = "\
Compare, within each namespace, every pair of controllers of the same kind (Deployment,
ReplicaSet, StatefulSet, DaemonSet, ReplicationController, Job) and PodDisruptionBudgets with
each other, and report the pairs whose selectors can select a common pod, with a witness label
set both select. Parents and children (a Deployment and its ReplicaSets) and siblings under one
controller are not compared.

Severity:
  error     a controller's pod template matches the other's selector (it will count or adopt
            those pods), or pods selected by both exist now
  warning   the selectors overlap logically, but no template or pod is affected yet

Every pod matched by more than one PodDisruptionBudget is listed too: the eviction API
refuses to evict such a pod, so drains hang.

-f checks manifests before they are applied (kubectl apply's -f: files, directories, -R, -
for stdin, as `helm template ... | kubectl coord overlaps -f -`): their objects are laid over
the live ones (the same kind, namespace and name replaces, new ones are added; no namespace
takes -n's or the context's) and only the findings involving an object of the files are
reported, each named with its file and document. --offline compares the files alone.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MinSeverity {
    Warning,
    Error,
}

#[derive(Debug, Args)]
#[command(long_about = LONG_ABOUT)]
pub struct OverlapsArgs {
    /// Only consider controllers matching this label selector
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Also compare controllers of different kinds (a StatefulSet against a Deployment)
    #[arg(long)]
    pub cross_kind: bool,
    /// Also list disjoint pairs with the key that separates them
    #[arg(long)]
    pub explain: bool,
    /// Exit 3 when any finding at or above --min-severity exists, or a pod is under several PDBs; exit 4 when there is none but something in scope could not be read
    #[arg(long)]
    pub exit_code: bool,
    /// Lowest severity that --exit-code counts
    #[arg(long, value_enum, default_value_t = MinSeverity::Warning)]
    pub min_severity: MinSeverity,
    /// Manifests to check before applying them: a file, a directory, - for stdin (repeat for more)
    #[arg(short = 'f', long = "filename", value_name = "FILE|DIR|-")]
    pub filename: Vec<std::path::PathBuf>,
    /// With -f: also the directories under a directory
    #[arg(short = 'R', long, requires = "filename")]
    pub recursive: bool,
    /// With -f: compare the files' objects with each other only, without a cluster
    #[arg(long, requires = "filename")]
    pub offline: bool,
}

pub async fn run(conn: &ConnectionArgs, fleet: &FleetArgs, printer: &Printer, args: &OverlapsArgs) -> Result<Outcome> {
    if let Some(s) = &args.selector {
        crate::analyze::selector::parse(s).map_err(|e| usage(format!("-l: {e}")))?;
    }
    let manifests = if args.filename.is_empty() {
        None
    } else {
        Some(crate::source::files::read(&args.filename, args.recursive).map_err(|e| usage(e.to_string()))?)
    };
    let manifests = manifests.as_ref();
    if args.offline {
        let manifests = manifests.expect("clap: --offline requires -f");
        // Where an object without a namespace goes: -n, else the context's, else default.
        let namespace = crate::connect::kubeconfig::offline_namespace(conn);
        let snap = fetch::Snapshot::default();
        let rendered = rendered_from(snap, Some(manifests), &namespace, |_| true, true, printer, args)?;
        return fleet::print_one(rendered, printer, args.exit_code);
    }
    fleet::run(conn, fleet, printer, args.exit_code, |session| async move {
        rendered(&session, printer, args, manifests).await
    })
    .await
}

async fn rendered(
    session: &Session,
    printer: &Printer,
    args: &OverlapsArgs,
    manifests: Option<&crate::source::files::Manifests>,
) -> Result<Rendered> {
    let snap = session.checking_namespace(fetch::snapshot(session, args.selector.as_deref())).await?;
    let all = session.all_namespaces;
    let in_scope = |ns: &str| all || ns == session.namespace;
    rendered_from(snap, manifests, &session.namespace, in_scope, all, printer, args)
}

/// The report of `snap`, with the files' objects laid over it when there are files.
fn rendered_from(
    mut snap: fetch::Snapshot,
    manifests: Option<&crate::source::files::Manifests>,
    namespace: &str,
    in_scope: impl Fn(&str) -> bool,
    all_namespaces: bool,
    printer: &Printer,
    args: &OverlapsArgs,
) -> Result<Rendered> {
    let (laid, mut notes) = match manifests {
        Some(m) => {
            let (laid, notes) = files::lay(&mut snap, m, namespace, in_scope);
            (Some(laid), m.skipped.iter().cloned().chain(notes).collect())
        }
        None => (None, Vec::new()),
    };
    let mut analysis = overlap::analyze(
        &snap.controllers,
        &snap.pods,
        // Only -o json|yaml names shared pods; the table counts them.
        &Options { cross_kind: args.cross_kind, explain: args.explain, sample: printer.is_machine() },
    );
    let index = laid.as_deref().map(files::index).unwrap_or_default();
    if laid.is_some() {
        files::only_theirs(&mut analysis, &index);
        if laid.as_ref().is_some_and(Vec::is_empty) {
            notes.push("none of the files' objects is a kind overlaps compares".to_string());
        }
    }
    let report = OverlapReport {
        api_version: SCHEMA_VERSION,
        kind: "OverlapReport",
        server_time: snap.server_time,
        complete: snap.skipped.is_empty(),
        controllers: snap.controllers.len(),
        pods: snap.pods.len(),
        analysis: &analysis,
        skipped: &snap.skipped,
        invalid: &snap.invalid,
        files: laid.as_deref(),
    };
    let shown_laid = laid.as_deref().unwrap_or_default();
    let mut rendered = Rendered::new(printer, &report, || {
        table(&analysis, printer, all_namespaces, (snap.controllers.len(), snap.pods.len()), shown_laid, &index)
    })?;
    rendered.warnings = snap
        .skipped
        .iter()
        .map(|note| format!("not listed: {note}; results may be incomplete"))
        .chain(snap.invalid.iter().map(|note| format!("skipped, selector not understood: {note}")))
        .chain(notes)
        .collect();
    let floor = match args.min_severity {
        MinSeverity::Warning => Severity::Warning,
        MinSeverity::Error => Severity::Error,
    };
    rendered.findings = analysis.findings.iter().any(|f| f.severity >= floor) || !analysis.pdb_conflicts.is_empty();
    rendered.incomplete = !snap.skipped.is_empty();
    Ok(rendered)
}
