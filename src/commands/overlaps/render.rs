//! The wire format and the table of `overlaps`.

use super::files::{FileIndex, FileObject};
use crate::analyze::check::some_names;
use crate::analyze::overlap::{Analysis, Severity, pdb_groups};
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
    pub analysis: &'a Analysis<'a>,
    pub skipped: &'a [Skipped],
    pub invalid: &'a [String],
    /// With -f: the files' objects compared (only findings involving one are reported).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<&'a [FileObject]>,
}

/// The table; a NAMESPACE column only across namespaces, as kubectl prints it.
pub fn table(
    a: &Analysis,
    printer: &Printer,
    all_namespaces: bool,
    counts: (usize, usize),
    laid: &[FileObject],
    files: &FileIndex,
) -> Table {
    let (controllers, pods) = counts;
    // An object from the files is named with its file and document.
    let named = |namespace: &str, kind: &str, name: &str| -> String {
        match files.get(&(namespace.to_string(), kind.to_string(), name.to_string())) {
            Some(&i) => format!("{name} ({}#{})", laid[i].file, laid[i].document),
            None => name.to_string(),
        }
    };
    let mut headers = vec!["KIND", "A", "B", "SEVERITY", "WITNESS", "LIVE PODS"];
    if all_namespaces {
        headers.insert(0, "NAMESPACE");
    }
    if !laid.is_empty() {
        headers.push("FILE");
    }
    let origin = |namespace: &str, kind: &str, name: &str| {
        files.get(&(namespace.to_string(), kind.to_string(), name.to_string())).map(|&i| &laid[i])
    };
    let mut grid = Grid::new(headers);
    for f in &a.findings {
        let kind = if f.a.kind == f.b.kind { f.a.kind.to_string() } else { format!("{}/{}", f.a.kind, f.b.kind) };
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
        let mut row: Vec<Styled> = Vec::with_capacity(8);
        if all_namespaces {
            row.push(f.namespace.into());
        }
        row.extend([
            kind.into(),
            f.a.name.into(),
            f.b.name.into(),
            sev,
            if witness.is_empty() { "<any>".into() } else { witness.join(",").into() },
            live.into(),
        ]);
        if !laid.is_empty() {
            // The file and document of each side from the files: "canary.yaml#2,#3" when
            // both come from one file.
            let mut shown: Vec<String> = Vec::new();
            let sides = [origin(f.namespace, f.a.kind, f.a.name), origin(f.namespace, f.b.kind, f.b.name)];
            for (i, o) in sides.iter().enumerate() {
                let Some(o) = o else { continue };
                let same_file = i == 1 && sides[0].is_some_and(|first| first.file == o.file);
                shown.push(if same_file { format!("#{}", o.document) } else { format!("{}#{}", o.file, o.document) });
            }
            row.push(shown.join(",").into());
        }
        grid.row(row);
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
    // One line per set of budgets, naming three of its pods (every one with -o wide): a budget
    // over a whole tier made one line per pod, tens of thousands saying the same thing.
    for ((namespace, budgets), pods) in pdb_groups(&a.pdb_conflicts) {
        let names = if printer.wide() { pods.join(", ") } else { some_names(pods.iter().copied(), pods.len()) };
        text.push(format!(
            "{namespace}/{}: {} ({names}) matched by {} PodDisruptionBudgets ({}): the eviction API will refuse to evict {}",
            crate::analyze::codes::SEVERAL_DISRUPTION_BUDGETS,
            counted(pods.len(), "pod"),
            budgets.len(),
            budgets.iter().map(|b| named(namespace, "PodDisruptionBudget", b)).collect::<Vec<_>>().join(", "),
            if pods.len() == 1 { "it" } else { "them" }
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
    if !laid.is_empty() {
        text.push(super::files::files_line(laid));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::overlap::tests::{ctl_in, pod_in};
    use crate::analyze::overlap::{Controller, Options, PodMeta, analyze};
    use crate::cli::OutputFormat;

    fn ctl(kind: &str, name: &str, sel: &str, template: &[(&str, &str)]) -> Controller {
        let template = (kind != "PodDisruptionBudget").then_some(template);
        ctl_in("coord-demo", kind, name, sel, template)
    }

    fn pod(name: &str, labels: &[(&str, &str)], owner: &str) -> PodMeta {
        pod_in("coord-demo", name, labels, Some(owner))
    }

    /// The demo's overlaps: a canary whose selector covers the stable Deployment's pods,
    /// set-based selectors that meet, and two PDBs over the same pods.
    #[test]
    fn fits_80_and_120_columns() {
        let stable = [("app", "shop"), ("track", "stable")];
        let controllers = vec![
            ctl("Deployment", "checkout", "app=shop,track=stable", &stable),
            ctl("Deployment", "checkout-canary", "app=shop", &[("app", "shop"), ("track", "canary")]),
            ctl("Deployment", "reports", "tier=batch,env!=prod", &[("tier", "batch"), ("env", "dev")]),
            ctl("Deployment", "reports-prod", "env=prod,tier=batch", &[("tier", "batch"), ("env", "prod")]),
            ctl("PodDisruptionBudget", "shop", "app=shop", &[]),
            ctl("PodDisruptionBudget", "stable-track", "track=stable", &[]),
        ];
        let pods = vec![
            pod("checkout-77c7c8857f-ng2hr", &stable, "checkout-77c7c8857f"),
            pod("checkout-77c7c8857f-pg5q5", &stable, "checkout-77c7c8857f"),
        ];
        let analysis = analyze(&controllers, &pods, &Options { cross_kind: false, explain: false, sample: false });
        assert!(!analysis.findings.is_empty() && !analysis.pdb_conflicts.is_empty());
        for (width, text) in crate::output::screens(|p| {
            table(&analysis, p, false, (controllers.len(), pods.len()), &[], &FileIndex::new()).render(p)
        }) {
            assert!(text.contains("stable-track") && text.contains("2 pods under several PDBs"), "{text}");
            insta::assert_snapshot!(format!("overlaps_{width}"), text);
        }
        // Across namespaces the NAMESPACE column comes first: the table still fits (its
        // header line was 101 columns in an 80-column terminal).
        for (width, text) in crate::output::screens(|p| {
            table(&analysis, p, true, (controllers.len(), pods.len()), &[], &FileIndex::new()).render(p)
        }) {
            assert!(text.starts_with("NAMESPACE"), "{text}");
            insta::assert_snapshot!(format!("overlaps_all_namespaces_{width}"), text);
        }
    }

    /// Pods under the same budgets are one line: three named, the rest counted, all with -o wide.
    #[test]
    fn pods_under_the_same_budgets_are_one_line() {
        let controllers = vec![
            ctl("PodDisruptionBudget", "all-web", "tier=web", &[]),
            ctl("PodDisruptionBudget", "shop", "app=shop", &[]),
        ];
        let pods: Vec<PodMeta> =
            (1..=5).map(|i| pod(&format!("shop-{i}"), &[("app", "shop"), ("tier", "web")], "shop-rs")).collect();
        let analysis = analyze(&controllers, &pods, &Options { cross_kind: false, explain: false, sample: false });
        assert_eq!(analysis.pdb_conflicts.len(), 5);
        let text = |format| {
            let printer = Printer::plain(format, Some(400));
            table(&analysis, &printer, false, (controllers.len(), pods.len()), &[], &FileIndex::new()).render(&printer)
        };
        let plain = text(OutputFormat::Table);
        let lines: Vec<&str> = plain.lines().filter(|l| l.contains("CO302")).collect();
        assert_eq!(
            lines,
            ["coord-demo/CO302: 5 pods (shop-1, shop-2, shop-3 and 2 more) matched by 2 PodDisruptionBudgets \
              (all-web, shop): the eviction API will refuse to evict them"],
            "{plain}"
        );
        let wide = text(OutputFormat::Wide);
        assert!(wide.contains("5 pods (shop-1, shop-2, shop-3, shop-4, shop-5) matched by"), "{wide}");
    }

    /// With -f, a FILE column names the file and document of each side from the files.
    #[test]
    fn objects_from_files_are_named_with_file_and_document() {
        let controllers = vec![
            ctl("PodDisruptionBudget", "shop", "app=shop", &[]),
            ctl("PodDisruptionBudget", "stable", "track=stable", &[]),
            ctl("Deployment", "stable", "app=shop,track=stable", &[("app", "shop"), ("track", "stable")]),
            ctl("Deployment", "canary", "app=shop", &[("app", "shop"), ("track", "canary")]),
        ];
        let analysis = analyze(&controllers, &[], &Options { cross_kind: false, explain: false, sample: false });
        let file = |kind: &str, name: &str, document| FileObject {
            kind: kind.into(),
            namespace: "coord-demo".into(),
            name: name.into(),
            file: "release.yaml".into(),
            document,
            replaces: false,
        };
        let laid = vec![
            file("PodDisruptionBudget", "shop", 2),
            file("PodDisruptionBudget", "stable", 3),
            file("Deployment", "canary", 1),
        ];
        let index = super::super::files::index(&laid);
        let printer = Printer::plain(OutputFormat::Table, Some(200));
        let text = table(&analysis, &printer, false, (4, 0), &laid, &index).render(&printer);
        let rows: Vec<Vec<&str>> = text.lines().skip(1).take(2).map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(rows[0].last(), Some(&"release.yaml#1"), "{text}");
        assert_eq!(rows[1].last(), Some(&"release.yaml#2,#3"), "{text}");
        assert!(text.lines().next().unwrap().ends_with("FILE"), "{text}");
        assert!(text.contains("from the files: PodDisruptionBudget coord-demo/shop (release.yaml#2), "), "{text}");
    }
}
