//! `kubectl coord leases`: who leads, how fresh, what is wrong.

pub(crate) mod fetch;
pub(crate) mod render;
mod watch;

use std::collections::BTreeSet;

use anyhow::Result;
use clap::Args;
use jiff::Timestamp;

use crate::analyze::lease::{LeaseClass, LeaseState, classify, state};
use crate::analyze::lease_report::{self, LeaseRow};
use crate::cli::{ConnectionArgs, FleetArgs};
use crate::commands::fleet::{self, Rendered};
use crate::connect::{Session, Skipped};
use crate::error::{Outcome, usage};
use crate::output::Printer;

pub use render::LeaseReport;

const LONG_ABOUT: &str = "\
List Leases with their holder, renewal age, expiry and the pod and controller behind the holder.

STATE is judged against the API server's clock (the Date header of the list response):
  fresh     renewed within 2/3 of leaseDurationSeconds
  at-risk   renewed longer ago than 2/3 of the duration: renew deadlines are being missed
  expired   renewed longer ago than the duration: any candidate may take the lease
  released  holderIdentity empty or null: given up cleanly
  skewed    renewTime more than 2s in the server's future: the holder's clock runs ahead
  unknown   no renewTime/acquireTime or no leaseDurationSeconds

CLASS: node-heartbeat (kube-node-lease), apiserver-identity, coordinated (spec.strategy set),
control-plane (kube-system kube-controller-manager, kube-scheduler, cloud-controller-manager),
leader-election (holder <name>_<uuid>), generic.

Node heartbeat leases are summarised in one line unless --nodes or -n kube-node-lease.";

#[derive(Debug, Args)]
#[command(long_about = LONG_ABOUT)]
pub struct LeasesArgs {
    /// Only these leases (by name)
    pub names: Vec<String>,
    /// Label selector to filter leases (e.g. app=web,tier!=db)
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// List node heartbeat leases one by one instead of the summary line
    #[arg(long)]
    pub nodes: bool,
    /// Exit 3 when any lease is expired, at-risk or skewed, or its holder pod is missing; exit 4 when there is none but something in scope could not be read
    #[arg(long)]
    pub exit_code: bool,
    /// Stay on a watch: one line per renewal, leader change, at-risk or expiry
    /// (judged by when a change was last observed, as client-go does). Ctrl-C ends it
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// End --watch after this long (30s, 5m, ...)
    #[arg(long, value_name = "DURATION", requires = "watch", value_parser = crate::connect::duration::limit_arg("--watch-timeout"))]
    pub watch_timeout: Option<std::time::Duration>,
    /// Seconds after which the server is asked to close each watch (it is reopened)
    #[arg(long, hide = true, default_value_t = 300)]
    pub watch_server_timeout: u64,
}

pub async fn run(conn: &ConnectionArgs, fleet: &FleetArgs, printer: &Printer, args: &LeasesArgs) -> Result<Outcome> {
    if args.watch {
        let session = Session::open(conn).await?;
        session.check_namespace().await?;
        let timeout = args.watch_timeout.filter(|d| !d.is_zero());
        let opts = watch::WatchOptions {
            selector: args.selector.as_deref(),
            names: &args.names,
            nodes: args.nodes || (!session.all_namespaces && session.namespace == "kube-node-lease"),
            timeout,
            server_timeout_seconds: args.watch_server_timeout.max(1),
        };
        return watch::run(&session, printer, &opts).await;
    }
    fleet::run(conn, fleet, printer, args.exit_code, |session| async move {
        let report = session.checking_namespace(collect(&session, printer, args)).await?;
        let table = || render::table(&report, printer, session.all_namespaces, &session.namespace);
        let mut rendered = Rendered::new(printer, &report, table)?;
        rendered.warnings = report.skipped.iter().map(|note| format!("not read: {note}")).collect();
        rendered.findings = !report.findings.is_empty();
        rendered.incomplete = !report.skipped.is_empty();
        Ok(rendered)
    })
    .await
}

async fn collect(session: &Session, printer: &Printer, args: &LeasesArgs) -> Result<LeaseReport> {
    // LeaseCandidates do not depend on the Lease list: read both at once.
    let mut candidate_notes = Vec::new();
    let (leases, candidates) = futures::join!(
        fetch::leases(session, args.selector.as_deref()),
        fetch::candidates(session, &mut candidate_notes)
    );
    let (mut leases, server_time, fallback) = leases.map_err(|e| {
        if e.is(http::StatusCode::BAD_REQUEST) && args.selector.is_some() {
            usage(format!("invalid -l selector {:?}: {}", args.selector.as_deref().unwrap_or_default(), e.message))
        } else {
            e.into()
        }
    })?;
    if !args.names.is_empty() {
        leases.retain(|l| args.names.contains(&l.name));
        let missing: Vec<&String> = args.names.iter().filter(|n| !leases.iter().any(|l| &l.name == *n)).collect();
        if !missing.is_empty() {
            let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
            let place = if session.all_namespaces {
                "any namespace".to_string()
            } else {
                format!("namespace {:?}", session.namespace)
            };
            return Err(anyhow::anyhow!("lease {} not found in {place}", names.join(", ")));
        }
    }
    let (now, clock) = match server_time {
        Some(t) => (t, "server"),
        None => {
            printer.warn("the API server sent no Date header; ages use the local clock");
            (Timestamp::now(), "local")
        }
    };

    let wanted: BTreeSet<(String, String)> = leases
        .iter()
        .filter_map(|l| lease_report::wants_holder_pod(l).map(|p| (l.namespace.clone(), p.to_string())))
        .collect();
    let expired_nodes: Vec<String> = leases
        .iter()
        .filter(|l| classify(l) == LeaseClass::NodeHeartbeat && state(l, now) == LeaseState::Expired)
        .map(|l| l.name.clone())
        .collect();
    // Holder pods and Nodes behind expired heartbeats: independent, so side by side.
    let (mut pod_notes, mut node_notes) = (Vec::new(), Vec::new());
    let (pods, nodes) = futures::join!(
        fetch::holder_pods(session, wanted, &mut pod_notes),
        fetch::nodes_exist(session, expired_nodes, &mut node_notes)
    );
    // Each source words its own notes (and drops its own repeats): no two can say the same.
    let skipped: Vec<Skipped> =
        fallback.iter().map(|f| f.note("leases")).chain(pod_notes).chain(candidate_notes).chain(node_notes).collect();
    leases.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let rows: Vec<LeaseRow> = leases
        .iter()
        .map(|l| {
            let pod = lease_report::wants_holder_pod(l)
                .and_then(|p| pods.get(&(l.namespace.clone(), p.to_string())).cloned());
            let cands =
                candidates.iter().filter(|c| c.namespace == l.namespace && c.lease_name == l.name).cloned().collect();
            lease_report::row(l, now, pod, cands)
        })
        .collect();

    let list_nodes =
        args.nodes || (!session.all_namespaces && session.namespace == "kube-node-lease") || !args.names.is_empty();
    Ok(LeaseReport::assemble(rows, (now, clock), &|n| nodes.get(n).copied().flatten(), list_nodes, skipped))
}
