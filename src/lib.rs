//! kubectl-coord: make Kubernetes controller coordination visible.
//!
//! Data flows one way: [`connect`] fetches plain snapshots from the API server,
//! [`analyze`] holds pure functions over them, [`output`] renders the results.
//! Each subcommand in [`commands`] wires the three together.

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
pub mod source;

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
