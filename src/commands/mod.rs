//! One module per subcommand: each fetches a snapshot, analyzes it, and renders it.

pub mod check;
pub mod completion;
pub mod dump;
pub mod fields;
pub mod fleet;
pub mod history;
pub mod leases;
pub mod overlaps;
pub mod owners;
pub mod schema;
pub mod trace;
pub mod version;

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;

use crate::cli::{Cli, Command};
use crate::error::Outcome;
use crate::output::Printer;

pub async fn run(cli: Cli) -> Result<Outcome> {
    let printer = Printer::new(&cli.output);
    if printer.format == crate::cli::OutputFormat::Chrome && !matches!(cli.command, Command::Trace(_)) {
        return Err(crate::error::usage("-o chrome is for trace only; use table, wide, json or yaml"));
    }
    if printer.format == crate::cli::OutputFormat::Junit && !matches!(cli.command, Command::Check(_)) {
        return Err(crate::error::usage("-o junit is for check only; use table, wide, json or yaml"));
    }
    if printer.format == crate::cli::OutputFormat::Blame && !matches!(cli.command, Command::Fields(_)) {
        return Err(crate::error::usage("-o blame is for fields only; use table, wide, json or yaml"));
    }
    if matches!(cli.command, Command::History(_)) && !history::format_supported(printer.format) {
        return Err(crate::error::usage("history prints table, wide, json or yaml"));
    }
    if cli.fleet.active() && !fleet_capable(&cli.command) {
        return Err(crate::error::usage(
            "--contexts and --all-contexts work with check, leases, owners --all, overlaps, fields (the census) and version",
        ));
    }
    let (conn, fleet) = (&cli.connection, &cli.fleet);
    let result = match cli.command {
        Command::Version(args) => version::run(conn, fleet, &printer, &args).await,
        Command::Completion(args) => completion::run(&args),
        Command::Leases(args) => leases::run(conn, fleet, &printer, &args).await,
        Command::Overlaps(args) => overlaps::run(conn, fleet, &printer, &args).await,
        Command::Fields(args) => fields::run(conn, fleet, &printer, &args).await,
        Command::Owners(args) => owners::run(conn, fleet, &printer, &args).await,
        Command::Trace(args) => trace::run(conn, &printer, &args).await,
        Command::Check(args) => check::run(conn, fleet, &printer, &args).await,
        Command::Dump(args) => dump::run(conn, &printer, &args).await,
        Command::History(args) => history::run(conn, &printer, &args),
        Command::Schema(args) => schema::run(&printer, &args),
    };
    // Said once, last, whatever the outcome: why the run was slow, or why it missed something.
    if let Some(throttled) = crate::connect::request::throttle_summary() {
        printer.warn(&throttled);
    }
    result
}

/// The commands that read a whole scope rather than one object or a watch.
fn fleet_capable(command: &Command) -> bool {
    match command {
        Command::Check(_) | Command::Overlaps(_) | Command::Version(_) => true,
        Command::Leases(a) => !a.watch,
        Command::Owners(a) => a.all,
        Command::Fields(a) => a.object.is_empty() && !a.watch && a.filename.is_none(),
        Command::Trace(_) | Command::Completion(_) | Command::Schema(_) | Command::History(_) | Command::Dump(_) => {
            false
        }
    }
}

/// Set when the process reads one cluster and ends after printing what it found, as it does
/// unless it reads a fleet (`--contexts`, `--all-contexts`).
static ENDS_AFTER_ONE: AtomicBool = AtomicBool::new(false);

/// Marks this run as one that ends after one cluster's answer.
pub(crate) fn ends_after_one() {
    ENDS_AFTER_ONE.store(true, Ordering::Relaxed);
}

/// Lets go of `value` without making the answer wait for it. A large check's snapshot, owner
/// graph and forest are hundreds of thousands of small allocations; freed in line they cost
/// ~10 ms before the answer is printed, and on a thread of their own about 6% of the run's
/// CPU beside the printing. When the process ends right after the answer they are left to
/// its end, which unmaps them at once; a fleet, which goes on to other clusters, frees them
/// on that thread.
pub(crate) fn drop_later<T: Send + 'static>(value: T) {
    if ENDS_AFTER_ONE.load(Ordering::Relaxed) {
        std::mem::forget(value);
        return;
    }
    // If no thread can be started, the closure, and the value with it, is dropped right here.
    let _ = std::thread::Builder::new().name("drop".into()).spawn(move || drop(value));
}
