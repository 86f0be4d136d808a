//! One command over one context or a fleet of them. A command hands over a [`Rendered`]
//! per context; alone it prints as it always has, over a fleet the tables merge under a
//! CONTEXT column and the reports become one FleetReport. A context that cannot be read is
//! a row with its error while the others are shown.

use std::future::Future;

use anyhow::Result;
use futures::{StreamExt, stream};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::cli::{ConnectionArgs, FleetArgs, OutputFormat};
use crate::connect::{Session, contexts};
use crate::error::{Outcome, one_line};
use crate::output::junit::{Suites, junit_document};
use crate::output::table::{Table, Tone, merge};
use crate::output::{Printer, SCHEMA_VERSION, out, out_with, paint};

/// What a command produced for one context, ready to print either way.
pub struct Rendered {
    pub machine: Value,
    pub table: Table,
    /// For stderr.
    pub warnings: Vec<String>,
    /// Whether anything --exit-code counts was found.
    pub findings: bool,
    /// Whether something in scope could not be read (and was not accepted as unreadable):
    /// with --exit-code and no findings, exit 4 rather than a clean 0.
    pub incomplete: bool,
    /// For -o junit (check): this context's testsuites.
    pub junit: Option<Suites>,
}

impl Rendered {
    /// Builds only what `printer`'s format prints: the report as JSON for -o json|yaml, the
    /// table for table|wide (a large check has tens of thousands of findings: either costs).
    pub fn new<T: Serialize>(printer: &Printer, report: &T, table: impl FnOnce() -> Table) -> Result<Rendered> {
        let machine = if printer.is_machine() { serde_json::to_value(report)? } else { Value::Null };
        let table = match printer.format {
            OutputFormat::Table | OutputFormat::Wide => table(),
            _ => Table::new(crate::output::table::Grid::new(Vec::new())),
        };
        Ok(Rendered { machine, table, warnings: Vec::new(), findings: false, incomplete: false, junit: None })
    }

    fn print(self, printer: &Printer) -> Result<()> {
        if let (OutputFormat::Junit, Some(suites)) = (printer.format, &self.junit) {
            out(&junit_document("kubectl coord check", std::slice::from_ref(suites))?)?;
        } else if printer.is_machine() {
            printer.machine(&self.machine)?;
        } else {
            out_with(|stdout| self.table.write_to(printer, stdout))?;
            // Its cells are as many strings as the table has cells.
            super::drop_later(self.table);
        }
        for w in &self.warnings {
            printer.warn(w);
        }
        Ok(())
    }
}

/// The stable machine shape of a fleet run: each context's report with `context` first,
/// or `context` and `error` for a context that could not be read.
#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FleetReport {
    api_version: &'static str,
    kind: &'static str,
    items: Vec<Value>,
}

/// Prints one report made without a cluster (--offline) and says how the run ends.
pub fn print_one(rendered: Rendered, printer: &Printer, exit_code: bool) -> Result<Outcome> {
    let (found, incomplete) = (rendered.findings, rendered.incomplete);
    rendered.print(printer)?;
    Ok(match (exit_code, found, incomplete) {
        (true, true, _) => Outcome::Findings,
        (true, false, true) => Outcome::Incomplete,
        _ => Outcome::Clean,
    })
}

/// Runs `one` in the session's context, or in each context of the fleet (at most
/// --max-parallel at once, each with its own client and namespace default), and prints.
pub async fn run<F, Fut>(
    conn: &ConnectionArgs,
    fleet: &FleetArgs,
    printer: &Printer,
    exit_code: bool,
    one: F,
) -> Result<Outcome>
where
    F: Fn(Session) -> Fut,
    Fut: Future<Output = Result<Rendered>>,
{
    let findings_outcome = |found: bool, incomplete: bool| match (exit_code, found, incomplete) {
        (true, true, _) => Outcome::Findings,
        (true, false, true) => Outcome::Incomplete,
        _ => Outcome::Clean,
    };
    if !fleet.active() {
        super::ends_after_one();
        let rendered = one(Session::open(conn).await?).await?;
        return print_one(rendered, printer, exit_code);
    }
    let names = contexts::select(fleet, conn.kubeconfig.as_deref())?;
    let one = &one;
    let results: Vec<(String, Result<Rendered>)> = stream::iter(names)
        .map(|name| async move {
            let mut args = conn.clone();
            args.context = Some(name.clone());
            let result = async { one(Session::open(&args).await?).await }.await;
            (name, result)
        })
        .buffered(usize::from(fleet.max_parallel))
        .collect()
        .await;

    let read = results.iter().filter(|(_, r)| r.is_ok()).count();
    let found = results.iter().any(|(_, r)| r.as_ref().is_ok_and(|r| r.findings));
    let incomplete = results.iter().any(|(_, r)| r.as_ref().is_ok_and(|r| r.incomplete));
    let mut tables = Vec::new();
    let mut items = Vec::new();
    let mut failures = Vec::new();
    let mut junit = Vec::new();
    for (context, result) in results {
        match result {
            Ok(mut r) => {
                junit.extend(r.junit.take());
                for w in &r.warnings {
                    printer.warn(&format!("{context}: {w}"));
                }
                items.push(with_context(&context, r.machine));
                tables.push((context, r.table));
            }
            Err(e) => {
                let error = one_line(&e);
                printer.warn(&format!("{context}: {error}"));
                let mut item = Map::new();
                item.insert("context".into(), context.clone().into());
                item.insert("error".into(), error.clone().into());
                items.push(Value::Object(item));
                failures.push((context, error));
            }
        }
    }
    if printer.format == OutputFormat::Junit {
        out(&junit_document("kubectl coord check", &junit)?)?;
    } else if printer.is_machine() {
        printer.machine(&FleetReport { api_version: SCHEMA_VERSION, kind: "FleetReport", items })?;
    } else {
        let mut text = merge(tables, printer);
        for (context, error) in &failures {
            text.push_str(&paint(&format!("{context}: error: {error}"), Tone::Bad, printer.color));
            text.push('\n');
        }
        out(&text)?;
    }
    if read == 0 {
        return Ok(Outcome::Unreadable);
    }
    Ok(findings_outcome(found, incomplete))
}

fn with_context(context: &str, report: Value) -> Value {
    let mut item = Map::new();
    item.insert("context".into(), context.into());
    match report {
        Value::Object(fields) => item.extend(fields.into_iter().filter(|(k, _)| k != "context")),
        other => {
            item.insert("report".into(), other);
        }
    }
    Value::Object(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_comes_first_and_replaces_the_reports_own() {
        let report = serde_json::json!({"apiVersion": "v", "kind": "CheckReport", "context": "inner", "findings": []});
        let item = with_context("prod", report);
        let keys: Vec<&String> = item.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["context", "apiVersion", "kind", "findings"]);
        assert_eq!(item["context"], "prod");
    }
}
