//! `kubectl-coord completion SHELL`: completion scripts generated from the clap definitions.

use anyhow::Result;
use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::cli::Cli;
use crate::error::Outcome;
use crate::output::out;

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell to generate for
    pub shell: Shell,
}

pub fn run(args: &CompletionArgs) -> Result<Outcome> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    // Completes the plugin binary itself; kubectl >= 1.26 also delegates
    // `kubectl coord <TAB>` to an executable named kubectl_complete-coord.
    clap_complete::generate(args.shell, &mut command, "kubectl-coord", &mut script);
    out(&String::from_utf8_lossy(&script))?;
    Ok(Outcome::Clean)
}
