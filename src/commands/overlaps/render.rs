//! The wire format and the table of `overlaps`.

use crate::analyze::overlap::{Analysis, Severity};
use crate::connect::Skipped;
use crate::output::table::{Grid, Styled, Table, Tone, styled};
use crate::output::{Printer, counted};

#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverlapReport<'a> {
    pub api_version: &'static str,
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_time: Option<jiff::Timestamp>,
    /// False when anything in scope could not be read (see skipped).
    pub complete: bool,
    pub controllers: usize,
    pub pods: usize,
    #[serde(flatten)]
    pub analysis: &'a Analysis,
    pub skipped: &'a [Skipped],
    pub invalid: &'a [String],
}

pub fn table(a: &Analysis, printer: &Printer, controllers: usize, pods: usize) -> Table {
    let mut grid = Grid::new(vec!["NAMESPACE", "KIND", "A", "B", "SEVERITY", "WITNESS", "LIVE PODS"]);
    for f in &a.findings {
        let kind = if f.a.kind == f.b.kind { f.a.kind.clone() } else { format!("{}/{}", f.a.kind, f.b.kind) };
        let witness: Vec<String> = f.witness.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let live = match (f.shared_pod_counts.total, f.shared_pod_counts.none) {
            (0, _) => "0".to_string(),
            (n, 0) => n.to_string(),
            (n, o) => format!("{n} ({o} orphaned)"),
        };
        let sev: Styled = match f.severity {
            Severity::Error => styled("error", Tone::Bad),
            Severity::Warning => styled("warning", Tone::Warn),
        };
        grid.row(vec![
            f.namespace.clone().into(),
            kind.into(),
            f.a.name.clone().into(),
            f.b.name.clone().into(),
            sev,
            if witness.is_empty() { "<any>".into() } else { witness.join(",").into() },
            live.into(),
        ]);
    }
    let mut text = Vec::new();
    let detail = printer.wide() || a.findings.len() <= 20;
    if detail {
        for f in a.findings.iter().filter(|f| !f.template_hazards.is_empty()) {
            for h in &f.template_hazards {
                text.push(format!("  {}: {h}", f.namespace));
            }
        }
    }
    for c in &a.pdb_conflicts {
        text.push(format!(
            "{}/{}: {} matched by {} PodDisruptionBudgets ({}): the eviction API will refuse to evict it",
            c.namespace,
            c.code,
            c.pod,
            c.budgets.len(),
            c.budgets.join(", ")
        ));
    }
    for d in &a.disjoint {
        let why = if d.separation.key.is_empty() {
            d.separation.reason.clone()
        } else {
            format!("{}: {}", d.separation.key, d.separation.reason)
        };
        text.push(format!("disjoint: {}/{} {} / {} {}: {why}", d.namespace, d.a.kind, d.a.name, d.b.kind, d.b.name));
    }
    let errors = a.findings.iter().filter(|f| f.severity == Severity::Error).count();
    text.push(format!(
        "{} ({}, {}), {} under several PDBs; {}, {}, {} decided",
        counted(a.findings.len(), "overlapping pair"),
        counted(errors, "error"),
        counted(a.findings.len() - errors, "warning"),
        counted(a.pdb_conflicts.len(), "pod"),
        counted(controllers, "controller"),
        counted(pods, "pod"),
        counted(a.pairs_compared, "pair")
    ));
    Table { grid, empty: None, lines: text }
}
