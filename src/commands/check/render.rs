//! `check` output: the findings table and a summary line per mechanism for people, the
//! CheckReport for scripts, JUnit XML for CI dashboards. Its wire structs live here.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};

use jiff::Timestamp;
use serde::Serialize;

use crate::analyze::check::{Finding, Mechanism, NotCovered, Severity, Summary};
use crate::analyze::silence::{Accepted, Silenced};
use crate::commands::owners::fetch::{Scope, Skipped};
use crate::commands::owners::render::footer_lines;
use crate::output::junit::{Suites, junit_document};
use crate::output::table::{Grid, Styled, Table, Tone, styled, wrap_under};
use crate::output::{Printer, SCHEMA_VERSION, counted, paint, serde_name};
use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};

pub struct Report {
    pub context: Option<String>,
    pub scope: Scope,
    pub server_time: Timestamp,
    pub min_severity: Severity,
    pub summaries: BTreeMap<Mechanism, Summary>,
    pub findings: Vec<Finding>,
    /// Findings an ignore annotation or rule silenced: not counted by --exit-code.
    pub silenced: Vec<Silenced>,
    /// --show-silenced: list them under the table.
    pub show_silenced: bool,
    /// What could not be read and counts against completeness.
    pub skipped: Vec<Skipped>,
    /// What could not be read but the ignore file accepts as known to be unreadable.
    pub accepted: Vec<Accepted>,
    pub invalid: Vec<String>,
    /// What else stderr should say (the audit log's skipped lines).
    pub notes: Vec<String>,
    /// Mechanisms asked for that the input cannot feed: the run is incomplete.
    pub not_covered: Vec<NotCovered>,
}

/// The stable machine shape of `check -o json|yaml`.
#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport<'a> {
    pub api_version: &'static str,
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<&'a str>,
    /// The namespace checked; absent with -A.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<&'a str>,
    pub server_time: Timestamp,
    /// False when anything in scope could not be read (see skipped), unless the ignore file
    /// accepts it as unreadable (see accepted).
    pub complete: bool,
    pub min_severity: Severity,
    pub mechanisms: Vec<MechanismReport<'a>>,
    pub findings: &'a [Finding],
    /// Findings silenced by an ignore annotation or an --ignore-file rule, with why.
    pub silenced: &'a [Silenced],
    pub skipped: &'a [Skipped],
    /// What could not be read and the ignore file accepts as unreadable, with why.
    pub accepted: &'a [Accepted],
    /// Controllers whose selector could not be understood.
    pub invalid: &'a [String],
    /// Mechanisms asked for that the input cannot feed (check -f: leases, trace; a dump
    /// without Leases: leases), with why. Any makes the run incomplete.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub not_covered: &'a [NotCovered],
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MechanismReport<'a> {
    pub name: Mechanism,
    #[serde(flatten)]
    pub summary: &'a Summary,
}

impl Report {
    pub fn machine(&self) -> CheckReport<'_> {
        CheckReport {
            api_version: SCHEMA_VERSION,
            kind: "CheckReport",
            context: self.context.as_deref(),
            namespace: match &self.scope {
                Scope::Namespace(ns) => Some(ns),
                Scope::AllNamespaces => None,
            },
            server_time: self.server_time,
            complete: self.complete(),
            min_severity: self.min_severity,
            mechanisms: self.summaries.iter().map(|(m, s)| MechanismReport { name: *m, summary: s }).collect(),
            findings: &self.findings,
            silenced: &self.silenced,
            skipped: &self.skipped,
            accepted: &self.accepted,
            invalid: &self.invalid,
            not_covered: &self.not_covered,
        }
    }

    /// Whether everything in scope was read and every mechanism asked for could run.
    pub fn complete(&self) -> bool {
        self.skipped.is_empty() && self.not_covered.is_empty()
    }

    /// Warnings for stderr: what was not read, selectors not understood.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = footer_lines(&self.skipped);
        out.extend(self.invalid.iter().map(|note| format!("skipped, selector not understood: {note}")));
        out.extend(self.notes.iter().cloned());
        out.extend(self.not_covered.iter().map(|n| format!("not covered: {}: {}", n.mechanism.name(), n.why)));
        out
    }

    pub fn text(mut self, printer: &Printer) -> String {
        self.take_table(printer, true).render(printer)
    }

    /// For people (`grouped`): the findings under their namespace and object, each with its
    /// detail command on its own line, wrapped to the terminal. Otherwise (-o wide, a fleet's
    /// merged table) one table row per finding, to grep and sort. Either way the findings'
    /// text is moved rather than copied (a large check has tens of thousands): `findings` is
    /// left empty.
    pub fn take_table(&mut self, printer: &Printer, grouped: bool) -> Table {
        let mut shown = [0; 3];
        for f in &self.findings {
            shown[f.severity as usize] += 1;
        }
        if grouped {
            let mut lines = self.grouped_lines(printer);
            lines.extend(self.summary_lines(shown, printer.wide()));
            return Table { grid: Grid::new(Vec::new()), empty: None, lines };
        }
        let all_namespaces = self.scope == Scope::AllNamespaces;
        let mut headers = vec!["SEVERITY", "CODE", "MECHANISM"];
        if all_namespaces {
            headers.push("NAMESPACE");
        }
        headers.extend(["OBJECT", "FINDING", "DETAIL"]);
        let mut grid = Grid::new(headers);
        let findings = std::mem::take(&mut self.findings);
        for f in findings {
            let mut row: Vec<Styled> = vec![severity_cell(f.severity), f.code.into(), f.mechanism.name().into()];
            if all_namespaces {
                row.push(f.namespace.unwrap_or_default().into());
            }
            let object = match f.file {
                Some(file) => format!("{} ({file})", f.object),
                None => f.object,
            };
            row.extend([object.into(), f.message.into(), f.detail.into()]);
            grid.row(row);
        }
        let mut lines = Vec::new();
        if !grid.is_empty() {
            lines.push(String::new());
        }
        lines.extend(self.summary_lines(shown, printer.wide()));
        Table { grid, empty: None, lines }
    }

    /// The findings by namespace (cluster-scoped ones first) and object, most severe object
    /// first within a namespace as the findings come sorted:
    ///
    /// ```text
    /// coord-demo
    ///   lease/stale-lock
    ///     error    CO101  last renewed 338d ago, past its 15s duration: the holder stopped
    ///                     renewing
    ///                     kubectl coord leases stale-lock -n coord-demo
    /// ```
    fn grouped_lines(&mut self, printer: &Printer) -> Vec<String> {
        // Groups in the order their first finding comes, each found through an index so that
        // tens of thousands of findings group in one pass; then a stable sort by namespace.
        let mut groups: Vec<(Option<String>, String, Vec<Finding>)> = Vec::new();
        let mut at: HashMap<(Option<String>, String), usize> = HashMap::new();
        for f in std::mem::take(&mut self.findings) {
            match at.entry((f.namespace.clone(), f.object.clone())) {
                Entry::Occupied(i) => groups[*i.get()].2.push(f),
                Entry::Vacant(slot) => {
                    slot.insert(groups.len());
                    groups.push((f.namespace.clone(), f.object.clone(), vec![f]));
                }
            }
        }
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        let mut lines = Vec::new();
        let mut heading: Option<&Option<String>> = None;
        for (namespace, object, found) in &groups {
            if heading != Some(namespace) {
                heading = Some(namespace);
                let name = namespace.as_deref().unwrap_or("(cluster-scoped)");
                lines.push(paint(name, Tone::Plain, printer.color));
            }
            match found.iter().find_map(|f| f.file.as_deref()) {
                Some(file) => lines.push(format!("  {object} ({file})")),
                None => lines.push(format!("  {object}")),
            }
            for f in found {
                // "    error    CO101  ": the text starts at one column for every finding.
                let marker = format!("{:<8} {:<6}", serde_name(&f.severity), f.code);
                let indent = 4 + marker.len() + 1;
                let text = format!("    {marker} {}", f.message);
                let mut wrapped = wrap_under(&text, printer.width, indent, 20);
                let (tone, painted) = (severity_cell(f.severity).tone, serde_name(&f.severity));
                if printer.color {
                    wrapped[0] = wrapped[0].replacen(&painted, &paint(&painted, tone, true), 1);
                }
                lines.extend(wrapped);
                let detail = format!("{:indent$}{}", "", f.detail);
                lines.extend(
                    wrap_under(&detail, printer.width, indent, 20).iter().map(|l| paint(l, Tone::Dim, printer.color)),
                );
            }
        }
        if !lines.is_empty() {
            lines.push(String::new());
        }
        lines
    }

    /// A line per mechanism, what was accepted as unreadable, the count of findings, and the
    /// silenced ones when asked for.
    fn summary_lines(&self, shown: [usize; 3], wide: bool) -> Vec<String> {
        let mut lines = Vec::new();
        for (m, s) in &self.summaries {
            lines.push(summary_line(*m, s, wide));
        }
        let at_or_above = match self.min_severity {
            Severity::Info => String::new(),
            s => format!(" at or above {}", serde_name(&s)),
        };
        for a in &self.accepted {
            let what = place(&a.resource, a.namespace.as_deref());
            lines.push(format!("accepted as unreadable: {what} ({}): {}", a.reason, a.why));
        }
        let silenced = match (self.silenced.len(), self.show_silenced) {
            (0, _) => String::new(),
            (n, false) => format!(", {n} silenced (--show-silenced lists them)"),
            (n, true) => format!(", {n} silenced:"),
        };
        let by_severity: Vec<String> = [Severity::Error, Severity::Warning, Severity::Info]
            .into_iter()
            .map(|sev| (sev, shown[sev as usize]))
            .filter(|(_, n)| *n > 0)
            .map(|(sev, n)| counted(n, &serde_name(&sev)))
            .collect();
        let shown: usize = shown.iter().sum();
        let by_severity = if by_severity.len() < 2 { String::new() } else { format!(" ({})", by_severity.join(", ")) };
        lines.push(format!("{}{by_severity}{at_or_above}{silenced}", counted(shown, "finding")));
        if self.show_silenced {
            for s in &self.silenced {
                let f = &s.finding;
                let place = f.namespace.as_deref().map(|n| format!("{n} ")).unwrap_or_default();
                lines.push(format!("  {} {place}{}: {} [{}: {}]", f.code, f.object, f.message, s.by, s.why));
            }
        }
        lines
    }

    /// One testsuite per mechanism, one testcase per kind of object it checked; a finding
    /// is a failure of its kind's testcase. What could not be read is a skipped testcase.
    pub fn junit(&self) -> anyhow::Result<String> {
        junit_document("kubectl coord check", &[self.junit_suites(None)])
    }

    /// The testsuites, named `PREFIX/mechanism` in a fleet.
    pub fn junit_suites(&self, prefix: Option<&str>) -> Suites {
        let prefix = prefix.map(|p| format!("{p}/")).unwrap_or_default();
        let mut suites = Vec::new();
        for (m, s) in &self.summaries {
            let mut classes: BTreeMap<&str, Vec<&Finding>> =
                s.checked.keys().map(|k| (k.as_str(), Vec::new())).collect();
            for f in self.findings.iter().filter(|f| f.mechanism == *m) {
                classes.entry(f.object_kind.as_str()).or_default().push(f);
            }
            let mut suite = TestSuite::new(format!("{prefix}{}", m.name()));
            for (class, found) in classes {
                let checked = s.checked.get(class).copied().unwrap_or(0);
                let status = match found.iter().map(|f| f.severity).max() {
                    None => TestCaseStatus::success(),
                    Some(worst) => {
                        let body: Vec<String> = found
                            .iter()
                            .map(|f| {
                                let place = f.namespace.as_deref().map(|n| format!("{n}/")).unwrap_or_default();
                                let (severity, code) = (serde_name(&f.severity), f.code);
                                format!("{severity} {code} {place}{}: {} ({})", f.object, f.message, f.detail)
                            })
                            .collect();
                        let mut failed = TestCaseStatus::non_success(NonSuccessKind::Failure);
                        failed
                            .set_type(serde_name(&worst))
                            .set_message(counted(found.len(), "finding"))
                            .set_description(body.join("\n"));
                        failed
                    }
                };
                let mut case = TestCase::new(format!("{class} ({checked} checked)"), status);
                case.set_classname(format!("coord.{}", m.name()));
                suite.add_test_case(case);
            }
            suites.push(suite);
        }
        // What could not be read (accepted or not) and what was silenced: skipped testcases,
        // so a dashboard shows them without failing the run.
        let coverage: Vec<(String, String)> = self
            .skipped
            .iter()
            .map(|s| (place(&s.resource, s.namespace.as_deref()), s.reason.clone()))
            .chain(
                self.not_covered
                    .iter()
                    .map(|n| (format!("mechanism {}", n.mechanism.name()), format!("not covered: {}", n.why))),
            )
            .chain(self.accepted.iter().map(|a| {
                (
                    place(&a.resource, a.namespace.as_deref()),
                    format!("{} (accepted as unreadable: {})", a.reason, a.why),
                )
            }))
            .collect();
        let silenced: Vec<(String, String)> = self
            .silenced
            .iter()
            .map(|s| {
                let f = &s.finding;
                let name = format!("{} {}", f.code, place(&f.object, f.namespace.as_deref()));
                (name, format!("{}: {} ({})", s.by, s.why, f.message))
            })
            .collect();
        for (name, cases) in [("coverage", coverage), ("silenced", silenced)] {
            if cases.is_empty() {
                continue;
            }
            let mut suite = TestSuite::new(format!("{prefix}{name}"));
            for (case, message) in cases {
                let mut status = TestCaseStatus::skipped();
                status.set_message(message);
                let mut case = TestCase::new(case, status);
                case.set_classname(format!("coord.{name}"));
                suite.add_test_case(case);
            }
            suites.push(suite);
        }
        Suites { suites, time: self.server_time, context: self.context.clone() }
    }
}

/// "secrets in a", "lease/x in kube-system".
fn place(what: &str, namespace: Option<&str>) -> String {
    match namespace {
        Some(n) => format!("{what} in {n}"),
        None => what.to_string(),
    }
}

fn severity_cell(s: Severity) -> Styled {
    match s {
        Severity::Error => styled("error", Tone::Bad),
        Severity::Warning => styled("warning", Tone::Warn),
        Severity::Info => styled("info", Tone::Dim),
    }
}

/// "owners: 1204 objects of 31 kinds checked: 2 errors, 1 warning"
pub fn summary_line(m: Mechanism, s: &Summary, wide: bool) -> String {
    let total: usize = s.checked.values().sum();
    let kinds = if wide {
        let each: Vec<String> = s.checked.iter().map(|(k, n)| format!("{k} {n}")).collect();
        format!(" ({})", each.join(", "))
    } else {
        format!(" of {}", counted(s.checked.len(), "kind"))
    };
    let mut counts = Vec::new();
    for (n, word) in [(s.errors, "error"), (s.warnings, "warning"), (s.infos, "info")] {
        if n > 0 {
            counts.push(format!("{n} {word}{}", if n == 1 || word == "info" { "" } else { "s" }));
        }
    }
    let verdict = if counts.is_empty() { "ok".to_string() } else { counts.join(", ") };
    format!("{}: {}{kinds} checked: {verdict}", m.name(), counted(total, "object"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::OutputFormat;

    fn report() -> Report {
        let mut summaries = BTreeMap::new();
        summaries.insert(
            Mechanism::Leases,
            Summary { checked: BTreeMap::from([("Lease".to_string(), 4)]), errors: 1, warnings: 0, infos: 0 },
        );
        summaries.insert(
            Mechanism::Owners,
            Summary {
                checked: BTreeMap::from([("ConfigMap".to_string(), 2), ("Pod".to_string(), 3)]),
                ..Default::default()
            },
        );
        Report {
            context: Some("dev".into()),
            scope: Scope::AllNamespaces,
            server_time: "2026-12-03T10:00:00Z".parse().unwrap(),
            min_severity: Severity::Warning,
            summaries,
            findings: vec![Finding {
                severity: Severity::Error,
                mechanism: Mechanism::Leases,
                code: "CO101",
                reason: "expired".into(),
                namespace: Some("kube-system".into()),
                object_kind: "Lease".into(),
                object: "lease/kube-scheduler".into(),
                message: "last renewed 2m ago, past its 15s duration & <gone>".into(),
                detail: "kubectl coord leases kube-scheduler -n kube-system".into(),
                file: None,
            }],
            silenced: Vec::new(),
            show_silenced: false,
            skipped: vec![Skipped {
                resource: "secrets".into(),
                namespace: Some("a".into()),
                reason: "forbidden".into(),
            }],
            accepted: Vec::new(),
            invalid: Vec::new(),
            notes: Vec::new(),
            not_covered: Vec::new(),
        }
    }

    impl Report {
        fn clone_for_test(&self) -> Report {
            Report {
                context: self.context.clone(),
                scope: self.scope.clone(),
                server_time: self.server_time,
                min_severity: self.min_severity,
                summaries: self.summaries.clone(),
                findings: self.findings.clone(),
                silenced: Vec::new(),
                show_silenced: false,
                skipped: self.skipped.clone(),
                accepted: Vec::new(),
                invalid: self.invalid.clone(),
                notes: Vec::new(),
                not_covered: Vec::new(),
            }
        }
    }

    fn printer() -> Printer {
        Printer::plain(OutputFormat::Table, None)
    }

    #[test]
    fn wide_has_one_row_per_finding_and_a_line_per_mechanism() {
        let text = report().take_table(&printer(), false).render(&printer());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("SEVERITY") && lines[0].contains("NAMESPACE") && lines[0].ends_with("DETAIL"));
        assert!(lines[1].starts_with("error") && lines[1].contains("lease/kube-scheduler"));
        assert!(lines[1].ends_with("kubectl coord leases kube-scheduler -n kube-system"));
        assert!(text.contains("leases: 4 objects of 1 kind checked: 1 error\n"));
        assert!(text.contains("owners: 5 objects of 2 kinds checked: ok\n"));
        assert!(text.ends_with("1 finding at or above warning\n"));
    }

    #[test]
    fn grouped_by_namespace_and_object_with_the_detail_under_each_finding() {
        let text = report().text(&printer());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "kube-system");
        assert_eq!(lines[1], "  lease/kube-scheduler");
        assert!(lines[2].starts_with("    error    CO101  last renewed 2m ago"), "{text}");
        assert_eq!(lines[3], "                    kubectl coord leases kube-scheduler -n kube-system");
        assert!(text.ends_with("1 finding at or above warning\n"), "{text}");
    }

    /// The people's view at 80 and 120 columns: no line wider than the terminal, and the
    /// layout as reviewed (cargo insta review after a deliberate change).
    #[test]
    fn fits_80_and_120_columns() {
        let mut r = report();
        let f = r.findings[0].clone();
        for (i, object) in ["deployment.apps/checkout", "deployment.apps/checkout-canary"].iter().enumerate() {
            r.findings.push(Finding {
                severity: Severity::Warning,
                mechanism: Mechanism::Overlaps,
                code: "CO301",
                reason: "overlap".into(),
                namespace: Some("coord-demo".into()),
                object_kind: "Deployment".into(),
                object: object.to_string(),
                message: format!("selector app=shop,track=stable overlaps Deployment checkout-{i} (app=shop), both select app=shop,track=stable; 2 pods selected by both now"),
                detail: "kubectl coord overlaps -n coord-demo --explain -l app=shop".into(),
                file: None,
            });
        }
        r.findings.push(Finding { namespace: None, object: "node/kwok-node-0".into(), ..f });
        for (width, text) in crate::output::screens(|p| r.clone_for_test().text(p)) {
            insta::assert_snapshot!(format!("check_grouped_{width}"), text);
        }
    }

    #[test]
    fn junit_has_a_suite_per_mechanism_a_case_per_kind_and_escapes() {
        let xml = report().junit().unwrap();
        assert!(xml.starts_with("<?xml"));
        assert!(
            xml.contains("<testsuites name=\"kubectl coord check (dev)\" tests=\"4\" skipped=\"1\" failures=\"1\"")
        );
        assert!(xml.contains("<testsuite name=\"leases\" tests=\"1\" skipped=\"0\" errors=\"0\" failures=\"1\""));
        assert!(xml.contains("<testsuite name=\"owners\" tests=\"2\" skipped=\"0\" errors=\"0\" failures=\"0\""));
        assert!(xml.contains("<testcase name=\"Pod (3 checked)\" classname=\"coord.owners\"/>"));
        assert!(xml.contains("15s duration &amp; &lt;gone&gt;"));
        assert!(xml.contains("<skipped message=\"forbidden\"/>"));
        assert_eq!(xml.matches("<testsuite ").count(), xml.matches("</testsuite>").count());
    }

    #[test]
    fn machine_report_is_incomplete_when_something_was_skipped() {
        let r = report();
        let v = serde_json::to_value(r.machine()).unwrap();
        assert_eq!(v["kind"], "CheckReport");
        assert_eq!(v["complete"], false);
        assert!(v.get("namespace").is_none());
        assert_eq!(v["mechanisms"][0]["name"], "leases");
        assert_eq!(v["mechanisms"][0]["checked"]["Lease"], 4);
        assert_eq!(v["findings"][0]["objectKind"], "Lease");
        assert_eq!(v["skipped"][0]["reason"], "forbidden");
    }
}
