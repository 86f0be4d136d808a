//! Exit codes and the one-line error report.
//!
//! Errors travel as `anyhow::Error`. A [`UsageError`] anywhere in the chain marks
//! bad input (exit 2); everything else is a failure talking to or reading from the
//! cluster (exit 1). Findings (exit 3) are not errors: commands return them as
//! an [`Outcome`].

use std::fmt;

pub const EXIT_OK: i32 = 0;
pub const EXIT_CLUSTER: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_FINDINGS: i32 = 3;
/// `check --exit-code` found nothing, but could not read everything in scope (and the
/// ignore file does not accept what it missed): not a clean pass.
pub const EXIT_INCOMPLETE: i32 = 4;

/// Bad flags, arguments, kubeconfig or context: the user can fix it without the cluster.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// What a command that ran to completion reports back to `main`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Clean,
    /// Findings were printed and the user asked for `--exit-code`.
    Findings,
    /// A fleet run printed what it could, but no context could be read.
    Unreadable,
    /// Nothing --exit-code counts was found, but the run could not read everything.
    Incomplete,
}

impl Outcome {
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Clean => EXIT_OK,
            Outcome::Findings => EXIT_FINDINGS,
            Outcome::Unreadable => EXIT_CLUSTER,
            Outcome::Incomplete => EXIT_INCOMPLETE,
        }
    }
}

pub fn exit_code_for(err: &anyhow::Error) -> i32 {
    if err.chain().any(|e| e.downcast_ref::<UsageError>().is_some()) { EXIT_USAGE } else { EXIT_CLUSTER }
}

/// The whole chain on one line, without repeating a cause that the outer message
/// already quotes (kube's errors often embed their source in their own text).
pub fn one_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string().replace(['\n', '\r'], " ");
        let text = text.trim();
        if text.is_empty() || line.contains(text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn usage_anywhere_in_chain_is_exit_2() {
        let err = Err::<(), _>(usage("bad flag")).context("while parsing").unwrap_err();
        assert_eq!(exit_code_for(&err), EXIT_USAGE);
        assert_eq!(exit_code_for(&anyhow::anyhow!("connection refused")), EXIT_CLUSTER);
    }

    #[test]
    fn one_line_drops_repeated_causes_and_newlines() {
        let inner = anyhow::anyhow!("connection refused");
        let err = inner.context("GET https://x: connection refused").context("cannot reach\nserver");
        assert_eq!(one_line(&err), "cannot reach server: GET https://x: connection refused");
    }
}
