//! `kubectl coord owners`: the ownerReferences graph around objects, a preview of
//! `kubectl delete --cascade=...`, and broken references.

pub(crate) mod fetch;
pub(crate) mod files;
pub(crate) mod render;

use crate::output::table::fit_lines;
use std::collections::BTreeSet;

use anyhow::{Result, anyhow};
use clap::Args;

use crate::analyze::cascade::{Policy, Prediction, predict};
use crate::analyze::owner_graph::{Finding, Graph, TreeRow, Walk, findings, tree};
use crate::analyze::resource_ref::{ApiResource, parse_args};
use crate::cli::{ConnectionArgs, FleetArgs};
use crate::commands::fleet::{self, Rendered};
use crate::connect::duration::duration_arg;
use crate::connect::{Session, discovery};
use crate::error::{Outcome, usage};
use crate::output::{Printer, out};

const LONG_ABOUT: &str = "\
Show an object's owners up to the root(s) and its dependents down to the leaves, as the
garbage collector sees them: references are resolved by kind, name and namespace and then
checked by uid, across the resource types the server serves (CRDs included), listed
metadata-only. For a namespaced object, every namespaced type in its namespace (where all its
dependents must be), then only the cluster-scoped types its owners belong to; for a
cluster-scoped object, every type everywhere.

An object with several owners is printed once and marked where it appears again.
CONTROLLER and BLOCKS describe the reference from the row to the row it hangs under.

--cascade=background|foreground|orphan previews `kubectl delete` with that policy: what the
garbage collector deletes, what stays because another owner is live, what is orphaned, what
blocks (finalizers; blockOwnerDeletion in foreground) and the order deletions complete in.

Findings: dangling references (owner missing, or recreated with another uid), references
across namespaces, cluster-scoped dependents of namespaced owners, owner kinds the server no
longer serves, several controller references, reference cycles, and objects stuck in
deletion. `owners --all` (with -n or -A) scans every object in scope for them.";

#[derive(Debug, Args)]
#[command(long_about = LONG_ABOUT)]
pub struct OwnersArgs {
    /// The objects: TYPE/NAME... (deploy/web, deployments.apps/web) or TYPE NAME...
    pub object: Vec<String>,
    /// Only owners, up to the roots
    #[arg(long)]
    pub up: bool,
    /// Only dependents, down to the leaves
    #[arg(long)]
    pub down: bool,
    /// At most this many levels in each direction
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,
    /// Preview `kubectl delete --cascade=POLICY` on the object
    #[arg(long, value_enum, value_name = "POLICY")]
    pub cascade: Option<Policy>,
    /// Scan every object in the namespace (-A: all namespaces) for findings; no trees
    #[arg(long)]
    pub all: bool,
    /// An object deleting for longer than this, with finalizers left, is stuck
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = duration_arg("--stuck-after"))]
    pub stuck_after: std::time::Duration,
    /// Exit 3 when any finding is reported; exit 4 when there is none but something in scope could not be read
    #[arg(long)]
    pub exit_code: bool,
    /// Manifests whose ownerReferences to check against the live objects before applying them:
    /// a file, a directory, - for stdin (repeat for more); the scan's findings for them alone
    #[arg(short = 'f', long = "filename", value_name = "FILE|DIR|-", conflicts_with_all = ["object", "all", "cascade", "up", "down", "depth"])]
    pub filename: Vec<std::path::PathBuf>,
    /// With -f: also the directories under a directory
    #[arg(short = 'R', long, requires = "filename")]
    pub recursive: bool,
}

/// One object the user named, found in the graph.
pub struct Target {
    pub node: usize,
    pub rows: Vec<TreeRow>,
    pub cascade: Option<Prediction>,
}

pub async fn run(conn: &ConnectionArgs, fleet: &FleetArgs, printer: &Printer, args: &OwnersArgs) -> Result<Outcome> {
    let stuck_after = args.stuck_after;
    if !args.filename.is_empty() {
        let manifests = crate::source::files::read(&args.filename, args.recursive).map_err(|e| usage(e.to_string()))?;
        let manifests = &manifests;
        return fleet::run(conn, fleet, printer, args.exit_code, |session| async move {
            scan(&session, printer, stuck_after, Some(manifests)).await
        })
        .await;
    }
    if args.all {
        if !args.object.is_empty() {
            return Err(usage("--all scans the namespace (or -A, every namespace); give no object with it"));
        }
        if args.cascade.is_some() || args.up || args.down || args.depth.is_some() {
            return Err(usage("--cascade, --up, --down and --depth need an object, not --all"));
        }
        return fleet::run(conn, fleet, printer, args.exit_code, |session| async move {
            scan(&session, printer, stuck_after, None).await
        })
        .await;
    }
    if args.object.is_empty() {
        return Err(usage("no object given: use TYPE/NAME (e.g. deploy/web), or --all to scan for findings"));
    }
    let wanted = parse_args(&args.object).map_err(usage)?;
    let session = Session::open(conn).await?;
    let resources = discovery::discover(&session.conn).await?;
    let mut targets: Vec<(&ApiResource, String)> = Vec::new();
    for w in &wanted {
        targets.push((resources.resolve(&w.type_name)?, w.name.clone()));
    }
    // Dependents of a cluster-scoped object may live in any namespace.
    let scope = if targets.iter().any(|(r, _)| !r.namespaced) || session.all_namespaces {
        fetch::Scope::AllNamespaces
    } else {
        fetch::Scope::Namespace(session.namespace.clone())
    };
    // A namespaced object's dependents are all in its namespace; its owners may be
    // cluster-scoped, and are found by following its references up.
    let snapshot = fetch::snapshot(&session, &resources, &scope, fetch::Reach::Tree);
    let mut snap = if scope == fetch::Scope::AllNamespaces {
        snapshot.await?
    } else {
        session.checking_namespace(snapshot).await?
    };
    snap.skipped.extend(resources.skipped());
    let server_time = snap.server_time;
    let graph = Graph::build(snap.objects, &snap.coverage);
    let stuck_secs = stuck_after.as_secs() as i64;

    let walk = match (args.up, args.down) {
        (true, false) => Walk { up: true, down: false, depth: args.depth },
        (false, true) => Walk { up: false, down: true, depth: args.depth },
        _ => Walk { up: true, down: true, depth: args.depth },
    };
    let mut shown = Vec::new();
    for (resource, name) in &targets {
        let ns = resource.namespaced.then_some(session.namespace.as_str());
        let node = graph.find(&resource.group, &resource.kind, ns, name).ok_or_else(|| {
            let place = ns.map(|n| format!(" in namespace {n:?}")).unwrap_or_default();
            match snap.skipped.iter().find(|s| s.resource == resource.qualified_name()) {
                Some(s) => anyhow!("cannot list {}{place}: {}", s.resource, s.reason),
                None => anyhow!("{} {name:?} not found{place}", resource.plural),
            }
        })?;
        let rows = tree(&graph, node, walk);
        let cascade = args.cascade.map(|p| predict(&graph, node, p));
        shown.push(Target { node, rows, cascade });
    }
    let printed: BTreeSet<usize> = shown.iter().flat_map(|t| t.rows.iter().map(|r| r.node)).collect();
    let scope_nodes: Vec<usize> = printed.iter().copied().collect();
    let found = findings(&graph, &scope_nodes, server_time, stuck_secs);
    let statuses = fetch::statuses(&session, &graph, &printed, &resources).await;
    let report = render::Trees {
        graph: &graph,
        targets: &shown,
        printed: &printed,
        statuses: &statuses,
        findings: &found,
        skipped: &snap.skipped,
        server_time,
    };
    if printer.is_machine() {
        printer.machine(&report.machine())?;
    } else {
        out(&fit_lines(&report.text(printer), printer.width))?;
    }
    render::footer(printer, &snap.skipped);
    Ok(outcome(args.exit_code, &found, !snap.skipped.is_empty()))
}

/// `owners --all`: every object in scope, findings only. With manifests (`-f`): their
/// objects laid over the live ones, and the findings for them alone.
async fn scan(
    session: &Session,
    printer: &Printer,
    stuck_after: std::time::Duration,
    manifests: Option<&crate::source::files::Manifests>,
) -> Result<Rendered> {
    let resources = discovery::discover(&session.conn).await?;
    let scope = if session.all_namespaces {
        fetch::Scope::AllNamespaces
    } else {
        session.check_namespace().await?;
        fetch::Scope::Namespace(session.namespace.clone())
    };
    let mut snap = fetch::snapshot(session, &resources, &scope, fetch::Reach::Everything).await?;
    snap.skipped.extend(resources.skipped());
    let mut notes = Vec::new();
    let (laid, nodes) = match manifests {
        Some(m) => {
            let all = session.all_namespaces;
            let in_scope = |ns: &str| all || ns == session.namespace;
            let (laid, nodes, lay_notes) = files::lay(&mut snap, m, &resources, &session.namespace, in_scope);
            notes.extend(m.skipped.iter().cloned().chain(lay_notes));
            (Some(laid), Some(nodes))
        }
        None => (None, None),
    };
    let graph = Graph::build(snap.objects, &snap.coverage);
    let nodes = nodes.unwrap_or_else(|| (0..graph.objects.len()).collect());
    let found = findings(&graph, &nodes, snap.server_time, stuck_after.as_secs() as i64);
    let report = render::Scan {
        graph: &graph,
        findings: &found,
        skipped: &snap.skipped,
        server_time: snap.server_time,
        scope: &scope,
        files: laid.as_deref(),
    };
    let mut rendered = Rendered::new(printer, &report.machine(), || report.table(printer))?;
    rendered.warnings = render::footer_lines(&snap.skipped);
    rendered.warnings.extend(notes);
    rendered.findings = !found.is_empty();
    rendered.incomplete = !snap.skipped.is_empty();
    Ok(rendered)
}

fn outcome(exit_code: bool, found: &[Finding], incomplete: bool) -> Outcome {
    match (exit_code, found.is_empty(), incomplete) {
        (true, false, _) => Outcome::Findings,
        (true, true, true) => Outcome::Incomplete,
        _ => Outcome::Clean,
    }
}
