//! `kubectl coord trace`: who reacted to what, with what lag, and where the chain of
//! controller reactions below an object stalls, joined with the stalled controller's lease.

pub(crate) mod fetch;
pub(crate) mod live;
pub(crate) mod render;
mod reorder;

use crate::output::table::fit_lines;
use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use jiff::Timestamp;

use crate::analyze::resource_ref::{ApiResource, parse_args};
use crate::analyze::sequence::timeline;
use crate::analyze::stall::{LeaseVerdict, Stall, confirmed, judge, stalls};
use crate::cli::ConnectionArgs;
use crate::connect::duration::duration_arg;
use crate::connect::{Session, discovery};
use crate::error::{Outcome, usage};
use crate::output::{Printer, out};

const LONG_ABOUT: &str = "\
Trace the chain of controller reactions below an object: the object and everything below it in
the owner tree, as a timeline of hops (creations, spec writes, status writes, Events), each with
its writer and the lag from the hop that caused it, reconstructed from live state.

Signals and how far they can be trusted: creationTimestamp and managedFields times have whole
seconds, and managedFields keep only each manager's last write, so lags between them are printed
as ±1s; Events carry microsecond eventTime when the emitter used events.k8s.io, are rate-limited,
and expire after about an hour. Causal annotations (tracing.k8s.io/traceparent, kausality.io/trace)
are shown when present.

Stalls: a generation not observed, a ReplicaSet/StatefulSet short of pods with no creations,
a pod with no node, a pod bound to a node whose kubelet never reported, a status not written since
the spec changed, each for longer than --stall-after. Each names the controller that should act
and joins it with that controller's leader-election Lease (kube-system/kube-controller-manager,
kube-system/kube-scheduler, kube-node-lease/NODE, or a lease named after a custom status writer).

--watch (or -- COMMAND...) follows the subtree live instead: metadata-only watches on its kinds
and on Events, one line per reaction as it arrives, with the lag measured on this client's clock,
ending when nothing has changed for --settle, then a summary per writer and the stalls left.

--audit-log PATH reads the API server's audit log for the subtree's objects: each of their
writes with its microsecond time, every one rather than each manager's last, in place of
managedFields' whole seconds, and past Events' hour (see `kubectl coord history`).";

#[derive(Debug, Args)]
#[command(long_about = LONG_ABOUT)]
pub struct TraceArgs {
    /// The object: TYPE/NAME (deploy/web) or TYPE NAME
    #[arg(value_name = "OBJECT")]
    pub object: Vec<String>,
    /// Work outstanding for longer than this is a stall
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration_arg("--stall-after"))]
    pub stall_after: Duration,
    /// Exit 3 when any stall is reported
    #[arg(long)]
    pub exit_code: bool,
    /// Follow the subtree live: one line per reaction as it happens
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// With --watch or a COMMAND: end once nothing has changed for this long
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = duration_arg("--settle"))]
    pub settle: Duration,
    /// End a live trace after this long at the latest (0: no limit)
    #[arg(long, value_name = "DURATION", value_parser = crate::connect::duration::limit_arg("--watch-timeout"))]
    pub watch_timeout: Option<std::time::Duration>,
    /// A command to run once the watches are open (after --), e.g. -- kubectl rollout restart deploy/web
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    /// The API server's audit log (a file, gzip, a directory, - for stdin; repeatable): every
    /// write of the subtree's objects with its microsecond time
    #[arg(long = "audit-log", value_name = "PATH", conflicts_with = "watch")]
    pub audit_log: Vec<std::path::PathBuf>,
    /// With --audit-log: from this time on (a duration back from now, or an RFC 3339 time)
    #[arg(long, value_name = "DURATION|TIME", requires = "audit_log",
          value_parser = crate::commands::history::moment_arg("--since"))]
    pub since: Option<crate::analyze::history::Micros>,
}

/// A stall with the lease that explains it.
pub struct Explained {
    pub stall: Stall,
    pub lease: Option<LeaseVerdict>,
}

pub async fn run(conn: &ConnectionArgs, printer: &Printer, args: &TraceArgs) -> Result<Outcome> {
    let wanted = parse_args(&args.object).map_err(usage)?;
    let [wanted] = wanted.as_slice() else {
        return Err(usage(format!("trace takes one object, got {}", wanted.len())));
    };
    let timeout = args.watch_timeout.filter(|d| !d.is_zero());
    if args.watch_timeout.is_some() && !args.watch && args.command.is_empty() {
        return Err(usage("--watch-timeout needs --watch or a COMMAND after --"));
    }
    let session = Session::open(conn).await?;
    let resources = discovery::discover(&session.conn).await?;
    let resource = resources.resolve(&wanted.type_name)?.clone();
    if args.watch || !args.command.is_empty() {
        let live = live::Live { resource: &resource, name: &wanted.name, timeout, command: &args.command };
        return live::run(&session, printer, &resources, args, live).await;
    }
    let mut report = trace_once(&session, printer, &resources, &resource, &wanted.name, args).await?;
    report.skipped.extend(resources.skipped());
    report.print(printer)?;
    Ok(if args.exit_code && !report.stalls.is_empty() { Outcome::Findings } else { Outcome::Clean })
}

/// One reconstruction from live state: read, build the timeline, find and explain stalls.
async fn trace_once(
    session: &Session,
    printer: &Printer,
    resources: &[ApiResource],
    resource: &ApiResource,
    name: &str,
    args: &TraceArgs,
) -> Result<render::Report> {
    let stall_after = args.stall_after;
    let fetched = fetch::subtree(session, resources, resource, name).await?;
    let now = fetched.server_time.unwrap_or_else(|| {
        printer.warn("the API server sent no Date header; ages use the local clock");
        Timestamp::now()
    });
    let hops = if args.audit_log.is_empty() {
        timeline(&fetched.snap)
    } else {
        let (writes, start) = tokio::task::block_in_place(|| audit_writes(&fetched.snap, resources, args, printer))?;
        crate::analyze::history::hops::timeline(&fetched.snap, &writes, start)
    };
    let found = stalls(&fetched.snap, now, stall_after.as_secs() as i64);
    let keys: BTreeSet<_> =
        found.iter().filter_map(|s| s.responsible.lease.clone()).filter(|k| !fetched.leases.contains_key(k)).collect();
    let mut leases = fetched.leases;
    if !keys.is_empty() {
        leases.extend(fetch::leases(session, keys).await);
    }
    let explained = found
        .into_iter()
        .map(|stall| {
            let lease = stall.responsible.lease.as_ref().and_then(|k| leases.get(k)).map(|l| judge(&stall, l, now));
            Explained { stall, lease }
        })
        .filter(|e| confirmed(&e.stall, e.lease.as_ref()))
        .collect();
    Ok(render::Report {
        snap: fetched.snap,
        hops,
        stalls: explained,
        skipped: fetched.skipped,
        server_time: now,
        stall_after,
    })
}

impl render::Report {
    fn print(&self, printer: &Printer) -> Result<()> {
        if printer.format == crate::cli::OutputFormat::Chrome {
            out(&render::chrome(&self.chrome_tracks()))?;
        } else if printer.is_machine() {
            printer.machine(&self.machine())?;
        } else {
            out(&fit_lines(&self.text(printer), printer.width))?;
        }
        render::footer(printer, &self.skipped);
        Ok(())
    }
}

/// The audit log's writes of each object of the subtree (by its resource, namespace and name,
/// from its creation on), in time order.
fn audit_writes(
    snap: &crate::analyze::sequence::TraceSnapshot,
    resources: &[ApiResource],
    args: &TraceArgs,
    printer: &Printer,
) -> Result<(Vec<Vec<crate::analyze::history::Request>>, Option<crate::analyze::history::Micros>)> {
    use crate::analyze::history::ObjectKey;
    let plural: std::collections::HashMap<(&str, &str), &str> =
        resources.iter().map(|r| ((r.group.as_str(), r.kind.as_str()), r.plural.as_str())).collect();
    let mut index: std::collections::HashMap<ObjectKey, usize> = std::collections::HashMap::new();
    for (i, o) in snap.objects.iter().enumerate() {
        let group = o.group();
        let Some(resource) = plural.get(&(group, &*o.kind)) else { continue };
        let key = ObjectKey {
            group: group.into(),
            resource: (*resource).into(),
            namespace: o.namespace.clone().unwrap_or_else(|| "".into()),
            name: o.name.as_str().into(),
        };
        index.insert(key, i);
    }
    let created: Vec<i64> =
        snap.objects.iter().map(|o| o.created.map_or(i64::MIN, |t| t.as_microsecond() - 1_000_000)).collect();
    let mut writes = vec![Vec::new(); snap.objects.len()];
    let want = crate::source::audit::Want { since: args.since, bodies: true, ..Default::default() };
    let summary = crate::source::audit::read(&args.audit_log, &want, |r| {
        if let Some(&i) = index.get(&r.object)
            && r.at >= created[i]
        {
            writes[i].push(r);
        }
    })
    .map_err(usage)?;
    crate::commands::history::warn_about(printer, &summary, None);
    Ok((writes, args.since.max(summary.first)))
}
