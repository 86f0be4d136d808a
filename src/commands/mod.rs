//! One module per subcommand: each fetches a snapshot, analyzes it, and renders it.

pub mod check;
pub mod completion;
pub mod fields;
pub mod leases;
pub mod overlaps;
pub mod owners;
pub mod trace;
pub mod version;

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
    match cli.command {
        Command::Version(args) => version::run(&cli.connection, &printer, &args).await,
        Command::Completion(args) => completion::run(&args),
        Command::Leases(args) => leases::run(&cli.connection, &printer, &args).await,
        Command::Overlaps(args) => overlaps::run(&cli.connection, &printer, &args).await,
        Command::Fields(args) => fields::run(&cli.connection, &printer, &args).await,
        Command::Owners(args) => owners::run(&cli.connection, &printer, &args).await,
        Command::Trace(args) => trace::run(&cli.connection, &printer, &args).await,
        Command::Check(args) => check::run(&cli.connection, &printer, &args).await,
    }
}
