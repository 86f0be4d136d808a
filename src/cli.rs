//! Command-line surface: kubectl's connection flags, output flags and the subcommands.
//! Global flags are `global = true` so they work before or after the subcommand,
//! as they do with kubectl (`kubectl coord version -o json`).

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::commands::{
    check::CheckArgs, completion::CompletionArgs, fields::FieldsArgs, history::HistoryArgs, leases::LeasesArgs,
    overlaps::OverlapsArgs, owners::OwnersArgs, trace::TraceArgs, version::VersionArgs,
};

pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  success
  1  error talking to or reading from the cluster
  2  bad usage or input (flags, arguments, kubeconfig, context)
  3  findings reported by a command run with --exit-code
  4  nothing found with --exit-code, but something in scope could not be read";

#[derive(Debug, Parser)]
#[command(
    name = "kubectl-coord",
    bin_name = "kubectl coord",
    version,
    about = "Make Kubernetes controller coordination visible: leases, owners, selector overlaps, field ownership",
    after_help = EXIT_CODES_HELP,
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub connection: ConnectionArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub fleet: FleetArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Client and server versions, the context, server URL and the authenticated user
    Version(VersionArgs),
    /// Lease holders, renewal ages, expiry, holder -> pod -> controller
    Leases(LeasesArgs),
    /// ownerReferences tree up and down, cascade preview, broken references
    Owners(OwnersArgs),
    /// Controllers whose label selectors overlap, with a witness and the pods both select
    Overlaps(OverlapsArgs),
    /// Which field managers own which fields of an object, and where they contend
    Fields(FieldsArgs),
    /// Who reacted to what below an object, with what lag, and where the chain stalls
    Trace(TraceArgs),
    /// Every analysis at once: findings by severity, each with the command that shows the detail
    Check(CheckArgs),
    /// What check reads of a cluster, to a gzip file for `check --from` where there is no access
    Dump(crate::commands::dump::DumpArgs),
    /// Who wrote an object when, from the API server's audit log; --findings: fights, conflicts, churn
    History(HistoryArgs),
    /// The JSON Schema of a report kind that -o json|yaml prints (without KIND: the kinds)
    Schema(crate::commands::schema::SchemaArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completion(CompletionArgs),
}

pub use crate::connect::args::{ConnectionArgs, FleetArgs};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    #[default]
    Table,
    Wide,
    Json,
    Yaml,
    /// Chrome trace-event JSON for Perfetto or chrome://tracing (trace only)
    Chrome,
    /// JUnit XML for CI dashboards (check only)
    Junit,
    /// The object as YAML with each line's owners in a gutter (fields TYPE/NAME or -f only)
    Blame,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ColorChoice {
    /// Colour only when stdout is a terminal and NO_COLOR is unset
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Output format
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    /// Do not print table headers
    #[arg(long, global = true)]
    pub no_headers: bool,
    /// When to colour table output
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// clap's usage error on one line: its first line plus a pointer to --help.
pub fn one_line_usage_error(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let first = rendered.lines().find(|l| !l.trim().is_empty()).unwrap_or("error: bad usage");
    let mut first = if first.starts_with("error:") { first.to_string() } else { format!("error: {first}") };
    // "the following required arguments were not provided:" lists them on the lines below.
    if first.ends_with(':') {
        let listed: Vec<&str> = rendered
            .lines()
            .skip_while(|l| l.trim().is_empty())
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .map(str::trim)
            .collect();
        first = format!("{first} {}", listed.join(", "));
    }
    let hint =
        rendered.lines().find_map(|l| l.trim().strip_prefix("tip: ").map(|t| format!("; {t}"))).unwrap_or_default();
    format!("{first}{hint} (see 'kubectl coord --help')")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage_error(args: &[&str]) -> String {
        let e = Cli::try_parse_from([&["kubectl-coord"], args].concat()).unwrap_err();
        one_line_usage_error(&e)
    }

    #[test]
    fn usage_errors_are_one_line_and_name_what_is_wrong() {
        let missing = usage_error(&["leases", "--watch-timeout", "5s"]);
        assert_eq!(
            missing,
            "error: the following required arguments were not provided: --watch (see 'kubectl coord --help')"
        );
        let bad = usage_error(&["owners", "deploy/x", "--stuck-after", "soon"]);
        assert!(
            bad.starts_with("error: invalid value 'soon' for '--stuck-after <DURATION>': invalid --stuck-after"),
            "{bad}"
        );
        let conflict = usage_error(&["check", "--only", "leases", "--skip", "owners"]);
        assert!(conflict.contains("cannot be used with") && !conflict.contains('\n'), "{conflict}");
        let fleet = usage_error(&["version", "--all-contexts", "--context", "x"]);
        assert!(fleet.contains("cannot be used with"), "{fleet}");
    }
}
