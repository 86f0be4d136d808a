//! `kubectl coord dump`: what `check` reads of a cluster, to one gzip file, for `check --from`
//! where there is no access (a support case, an incident review).

use std::io::IsTerminal as _;

use anyhow::Result;
use clap::Args;

use crate::cli::ConnectionArgs;
use crate::connect::Session;
use crate::error::{Outcome, usage};
use crate::output::Printer;

const LONG_ABOUT: &str = "\
Write what `kubectl coord check` reads of a cluster (-n NS, or -A) to standard output as one gzip
file, for `kubectl coord check --from FILE` where there is no access to the cluster:

  kubectl coord dump -A > cluster.coord.gz
  kubectl coord check --from cluster.coord.gz

It keeps controllers, PodDisruptionBudgets, Leases and LeaseCandidates whole, every other
object's metadata (managedFields for the kinds the fields census reads), the server's time,
the pods with no node, and what could not be read and why. No Secret data and no annotation
value of a Secret is ever written; of other objects' annotations only kubectl-coord's own.";

#[derive(Debug, Args)]
#[command(long_about = LONG_ABOUT)]
pub struct DumpArgs {}

pub async fn run(conn: &ConnectionArgs, printer: &Printer, _args: &DumpArgs) -> Result<Outcome> {
    let stdout = std::io::stdout();
    if stdout.is_terminal() {
        return Err(usage("dump writes gzip to standard output: redirect it to a file (> cluster.coord.gz)"));
    }
    let session = Session::open(conn).await?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let written = crate::commands::check::dump::write(&session, &mut out).await?;
    for s in &written.skipped {
        printer.warn(&format!("skipped {s}"));
    }
    printer.note(&format!(
        "dumped {} in {}",
        crate::output::counted(written.objects, "object"),
        crate::output::counted(written.lists, "list")
    ));
    Ok(Outcome::Clean)
}
