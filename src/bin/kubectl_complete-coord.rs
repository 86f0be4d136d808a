//! `kubectl_complete-coord`: kubectl (1.26+) runs it for `kubectl coord <TAB>`.
//!
//! A launcher, not a second copy of the plugin: it runs `kubectl-coord __complete WORDS`
//! from its own directory (where krew and the release archive put both), else from PATH.
//! Linking the library here made a second 10 MB binary, more than half the archive
//! again; the launcher is a few hundred KB and costs one exec per <TAB>.
//! It uses nothing of the library, so no code but std's is linked in.

use std::path::PathBuf;
use std::process::Command;

const PLUGIN: &str = if cfg!(windows) { "kubectl-coord.exe" } else { "kubectl-coord" };

fn main() {
    // A completion must never print an error: with no plugin to ask, offer nothing and
    // tell the shell not to fall back to file names (cobra's ShellCompDirectiveNoFileComp).
    let Some(plugin) = plugin() else {
        println!(":4");
        return;
    };
    let mut command = Command::new(plugin);
    command.arg("__complete").args(std::env::args_os().skip(1));
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // exec only returns on failure.
        let _ = command.exec();
        println!(":4");
    }
    #[cfg(not(unix))]
    {
        let code = command.status().ok().and_then(|s| s.code());
        if code.is_none() {
            println!(":4");
        }
    }
}

/// The plugin beside this executable (symlinks resolved: users link the launcher onto
/// PATH from krew's store), else the first on PATH.
fn plugin() -> Option<PathBuf> {
    let here = std::env::current_exe().ok().and_then(|p| p.canonicalize().ok());
    let beside = here.and_then(|p| p.parent().map(|d| d.join(PLUGIN)));
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|d| d.join(PLUGIN));
    beside.into_iter().chain(on_path).find(|p| p.is_file())
}
