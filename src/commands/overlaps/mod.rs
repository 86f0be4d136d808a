//! `kubectl coord overlaps`: exact selector overlap between controllers, with proof.

pub(crate) mod fetch;
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
refuses to evict such a pod, so drains hang.";

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
}

pub async fn run(conn: &ConnectionArgs, fleet: &FleetArgs, printer: &Printer, args: &OverlapsArgs) -> Result<Outcome> {
    if let Some(s) = &args.selector {
        crate::analyze::selector::parse(s).map_err(|e| usage(format!("-l: {e}")))?;
    }
    fleet::run(conn, fleet, printer, args.exit_code, |session| async move { rendered(&session, printer, args).await })
        .await
}

async fn rendered(session: &Session, printer: &Printer, args: &OverlapsArgs) -> Result<Rendered> {
    let snap = session.checking_namespace(fetch::snapshot(session, args.selector.as_deref())).await?;
    let analysis = overlap::analyze(
        &snap.controllers,
        &snap.pods,
        // Only -o json|yaml names shared pods; the table counts them.
        &Options { cross_kind: args.cross_kind, explain: args.explain, sample: printer.is_machine() },
    );
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
    };
    let mut rendered = Rendered::new(printer, &report, || {
        table(&analysis, printer, session.all_namespaces, (snap.controllers.len(), snap.pods.len()))
    })?;
    rendered.warnings = snap
        .skipped
        .iter()
        .map(|note| format!("not listed: {note}; results may be incomplete"))
        .chain(snap.invalid.iter().map(|note| format!("skipped, selector not understood: {note}")))
        .collect();
    let floor = match args.min_severity {
        MinSeverity::Warning => Severity::Warning,
        MinSeverity::Error => Severity::Error,
    };
    rendered.findings = analysis.findings.iter().any(|f| f.severity >= floor) || !analysis.pdb_conflicts.is_empty();
    rendered.incomplete = !snap.skipped.is_empty();
    Ok(rendered)
}
