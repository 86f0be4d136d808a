//! kubectl-coord: make Kubernetes controller coordination visible.
//!
//! Data flows one way: the sources ([`connect`]: the live API; [`source`]: the audit log
//! and manifests in files) produce the plain records of [`snapshot`], [`analyze`] holds pure
//! functions over them, [`output`] renders the results. Each subcommand in [`commands`] wires
//! them together. The `layers` test below keeps the imports that way.

// RequestError carries the method, path and server so every error names them; it is
// returned rarely and never in a hot loop, so its size does not matter.
#![allow(clippy::result_large_err)]

pub mod age;
pub mod analyze;
pub mod cli;
pub mod commands;
pub mod complete;
pub mod connect;
pub mod error;
pub mod output;
pub mod snapshot;
pub mod source;
pub mod text;

use clap::Parser;

/// Parses arguments, runs the command, reports errors on one line; returns the exit code.
pub fn main_exit_code() -> i32 {
    // `kubectl coord __complete WORDS`: what the kubectl_complete-coord launcher runs.
    // args_os: std::env::args panics on an argument that is not UTF-8; clap reports those.
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|a| a == "__complete") {
        return complete::main_exit_code(args.map(|a| a.to_string_lossy().into_owned()).collect());
    }
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version
            let _ = e.print();
            return error::EXIT_OK;
        }
        Err(e) => {
            eprintln!("{}", cli::one_line_usage_error(&e));
            return error::EXIT_USAGE;
        }
    };
    // Pages are decoded on the blocking pool. Tokio's default lets it grow to 512 threads,
    // and with a dozen lists in flight it grew to a dozen: more threads than cores, each with
    // its own allocator heap, so memory one freed was not reused by another (check -n
    // bench-l on 2 cores: 47,000 page faults and 322 ms of CPU, against 43,800 and 313 ms
    // with one thread per core).
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(cores)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return error::EXIT_CLUSTER;
        }
    };
    let result = runtime.block_on(async {
        output::progress::start();
        commands::run(cli).await
    });
    output::progress::stop();
    match result {
        Ok(outcome) => outcome.exit_code(),
        Err(err) => {
            eprintln!("error: {}", error::one_line(&err));
            error::exit_code_for(&err)
        }
    }
}

/// The layers, as their non-test code imports one another: analyze/ nothing from connect/,
/// output/, commands/ or cli.rs; no source (connect/, source/) and not snapshot/ anything
/// from analyze/ or commands/ (nor cli.rs); snapshot/ nothing from a source.
#[cfg(test)]
mod layers {
    use std::path::Path;

    /// Every `crate::` path of the non-test code of the .rs files under `dir`.
    fn imports(dir: &Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                imports(&path, out);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = without_test_modules(&text);
            for (at, _) in code.match_indices("crate::") {
                let rest = &code[at + "crate::".len()..];
                let module: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                out.push((path.display().to_string(), module));
            }
        }
    }

    /// The text less every `mod tests { ... }` block (by its braces).
    fn without_test_modules(text: &str) -> String {
        let mut out = String::new();
        let mut depth = 0usize;
        for line in text.lines() {
            let starts = depth == 0 && line.trim_start().trim_start_matches("pub(crate) ").starts_with("mod tests {");
            if depth > 0 || starts {
                depth += line.matches('{').count();
                depth = depth.saturating_sub(line.matches('}').count());
                continue;
            }
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    #[test]
    fn each_layer_imports_only_the_layers_below_it() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let rules: &[(&str, &[&str])] = &[
            ("analyze", &["connect", "output", "commands", "cli", "source"]),
            ("connect", &["analyze", "commands", "cli", "source"]),
            ("source", &["analyze", "commands", "cli", "connect"]),
            ("snapshot", &["analyze", "commands", "cli", "connect", "source", "output"]),
        ];
        let mut wrong = Vec::new();
        for (layer, forbidden) in rules {
            let mut found = Vec::new();
            imports(&src.join(layer), &mut found);
            assert!(!found.is_empty() || *layer == "snapshot", "no imports read under {layer}: the scan is broken");
            wrong.extend(found.into_iter().filter(|(_, m)| forbidden.contains(&m.as_str())));
        }
        assert!(wrong.is_empty(), "imports against the flow: {wrong:?}");
    }
}
