//! The wire format and the table of `leases`.

use std::time::Duration;

use crate::age::{human, human_signed};
use crate::analyze::lease::{LeaseClass, LeaseState, SKEW_MARGIN_MICROS, looks_like_controller_pod};
use crate::analyze::lease_report::{self, Finding, Leadership, LeaseRow, NodeSummary};
use crate::connect::Skipped;
use crate::output::table::{Grid, Styled, Table, Tone, styled};
use crate::output::{Printer, SCHEMA_VERSION, paint, serde_name};

/// The stable machine shape of `leases -o json|yaml`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeaseReport {
    pub api_version: &'static str,
    pub kind: &'static str,
    /// The clock ages are measured against.
    pub server_time: jiff::Timestamp,
    /// "server" (the Date header) or "local" (the server sent none).
    pub clock: &'static str,
    pub leases: Vec<LeaseRow>,
    pub node_leases: NodeSummary,
    pub leadership: Vec<Leadership>,
    pub findings: Vec<Finding>,
    /// False when anything in scope could not be read (see skipped).
    pub complete: bool,
    /// What could not be read: {resource, namespace, reason}.
    pub skipped: Vec<Skipped>,
}

impl LeaseReport {
    /// The report from the rows (pure): node heartbeats summarised unless `list_nodes`,
    /// findings and leadership over every row.
    pub fn assemble(
        rows: Vec<LeaseRow>,
        (server_time, clock): (jiff::Timestamp, &'static str),
        node_exists: &dyn Fn(&str) -> Option<bool>,
        list_nodes: bool,
        skipped: Vec<Skipped>,
    ) -> LeaseReport {
        let node_leases = lease_report::node_summary(&rows, node_exists);
        let findings = lease_report::findings(&rows);
        let leadership = lease_report::leadership(&rows);
        let leases = rows.into_iter().filter(|r| list_nodes || r.class != LeaseClass::NodeHeartbeat).collect();
        LeaseReport {
            api_version: SCHEMA_VERSION,
            kind: "LeaseReport",
            server_time,
            clock,
            leases,
            node_leases,
            leadership,
            findings,
            complete: skipped.is_empty(),
            skipped,
        }
    }
}

pub fn table(report: &LeaseReport, printer: &Printer, all_namespaces: bool, namespace: &str) -> Table {
    let wide = printer.wide();
    let mut headers = Vec::new();
    if all_namespaces {
        headers.push("NAMESPACE");
    }
    // At a glance: who holds what, and whether it is still renewed. The rest is -o wide
    // (kubectl's convention), so the default fits 100 columns beside 60-character holders.
    headers.extend(["NAME", "HOLDER", "RENEWED", "STATE"]);
    if wide {
        headers.extend(["CLASS", "DURATION", "TRANSITIONS", "ACQUIRED"]);
        headers.extend(["POD", "CONTROLLER", "STRATEGY", "PREFERRED", "CANDIDATES"]);
    }
    let mut grid = Grid::new(headers);
    for r in &report.leases {
        let mut cells: Vec<Styled> = Vec::new();
        if all_namespaces {
            cells.push(r.namespace.clone().into());
        }
        cells.push(r.name.clone().into());
        cells.push(match &r.holder {
            Some(h) => h.clone().into(),
            None => styled("<none>", Tone::Dim),
        });
        cells.push(age_cell(r.renew_age_seconds));
        cells.push(styled(r.state.as_str(), tone(r.state)));
        if wide {
            cells.push(r.class.as_str().into());
            cells.push(r.lease_duration_seconds.map(|d| format!("{d}s")).unwrap_or_else(|| "<none>".into()).into());
            cells.push(r.lease_transitions.map(|t| t.to_string()).unwrap_or_else(|| "<none>".into()).into());
            cells.push(age_cell(r.acquire_age_seconds));
            let (pod, controller) = pod_cells(r);
            cells.push(pod);
            cells.push(controller.into());
            cells.push(r.strategy.clone().unwrap_or_else(|| "<none>".into()).into());
            cells.push(r.preferred_holder.clone().unwrap_or_else(|| "<none>".into()).into());
            cells.push(r.candidates.len().to_string().into());
        }
        grid.row(cells);
    }
    let mut table = Table::new(grid);
    if report.node_leases.total == 0 {
        let place = if all_namespaces { "any namespace".to_string() } else { format!("{namespace} namespace") };
        // kubectl's wording, on stdout so scripts see an empty but explained result.
        table.empty = Some(format!("No leases found in {place}."));
    }
    if report.node_leases.total > 0
        && !report.leases.iter().any(|r| r.class == crate::analyze::lease::LeaseClass::NodeHeartbeat)
    {
        table.lines.push(node_line(&report.node_leases));
    }
    for l in &report.leadership {
        let w = &l.workload;
        let replicas = w.replicas.map(|n| n.to_string()).unwrap_or_else(|| "?".into());
        table.lines.push(format!(
            "{}/{}: {}/{replicas} replicas lead ({})",
            w.kind.to_lowercase(),
            w.name,
            l.leading_pods,
            l.leases.join(", ")
        ));
    }
    if !report.findings.is_empty() {
        table.lines.push(String::new());
        for f in &report.findings {
            let kind = serde_name(&f.kind);
            let line = format!("{}/{}: {} {kind}: {}", f.namespace, f.name, f.code, f.message);
            table.lines.push(paint(&line, Tone::Bad, printer.color));
        }
    }
    table
}

fn node_line(s: &NodeSummary) -> String {
    let counts: Vec<String> = s.by_state.iter().map(|(state, n)| format!("{n} {state}")).collect();
    let mut line = format!("{} node leases: {}", s.total, counts.join(", "));
    if !s.expired.is_empty() {
        let names: Vec<String> = s
            .expired
            .iter()
            .map(|e| match e.node_exists {
                Some(true) => e.name.clone(),
                Some(false) => format!("{} (node gone)", e.name),
                None => format!("{} (node unknown)", e.name),
            })
            .collect();
        line.push_str(&format!(": expired: {}", names.join(", ")));
    }
    line.push_str(" (--nodes lists them)");
    line
}

fn pod_cells(r: &LeaseRow) -> (Styled, String) {
    let Some(pod) = &r.holder_pod else {
        return ("<none>".into(), "<none>".into());
    };
    let pod_cell = match pod.exists {
        Some(false) if looks_like_controller_pod(&pod.name) => styled(format!("{} (gone)", pod.name), Tone::Bad),
        Some(false) => styled("<not a pod>", Tone::Dim),
        None => styled(format!("{} (unknown)", pod.name), Tone::Dim),
        Some(true) => {
            let ready = match pod.ready {
                Some(true) => "ready",
                Some(false) => "not ready",
                None => pod.phase.as_deref().unwrap_or("unknown"),
            };
            styled(format!("{} ({ready})", pod.name), if pod.ready == Some(true) { Tone::Plain } else { Tone::Warn })
        }
    };
    let controller = pod
        .controller
        .as_ref()
        .map(|w| format!("{}/{}", w.kind.to_lowercase(), w.name))
        .unwrap_or_else(|| "<none>".into());
    (pod_cell, controller)
}

fn age_cell(seconds: Option<f64>) -> Styled {
    match seconds {
        None => styled("<none>", Tone::Dim),
        // The Date header has whole seconds: a renewal up to the skew margin "ahead" is just now.
        Some(s) if s < -(SKEW_MARGIN_MICROS as f64 / 1e6) => styled(human_signed(s.floor() as i64), Tone::Warn),
        Some(s) if s < 0.0 => "0s".into(),
        Some(s) => human(Duration::from_secs(s as u64)).into(),
    }
}

fn tone(state: LeaseState) -> Tone {
    match state {
        LeaseState::Fresh => Tone::Good,
        LeaseState::AtRisk | LeaseState::Skewed => Tone::Warn,
        LeaseState::Expired => Tone::Bad,
        LeaseState::Released | LeaseState::Unknown => Tone::Dim,
    }
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;

    use super::*;
    use crate::analyze::lease::LeaseSnapshot;
    use crate::analyze::lease_report::{HolderPod, Workload};
    use crate::cli::OutputFormat;

    const NOW: i64 = 1_800_000_000;

    fn lease(ns: &str, name: &str, holder: &str, renewed_ago: i64, duration: i32) -> LeaseSnapshot {
        LeaseSnapshot {
            namespace: ns.into(),
            name: name.into(),
            holder: Some(holder.into()).filter(|h: &String| !h.is_empty()),
            duration_seconds: Some(duration),
            transitions: Some(2),
            renew_time: Some(Timestamp::from_second(NOW - renewed_ago).unwrap()),
            acquire_time: Some(Timestamp::from_second(NOW - renewed_ago - 3600).unwrap()),
            ..Default::default()
        }
    }

    fn pod(name: &str, exists: bool) -> HolderPod {
        HolderPod {
            name: name.into(),
            exists: Some(exists),
            phase: Some("Running".into()),
            ready: Some(true),
            controller: Some(Workload {
                kind: "Deployment".into(),
                name: "leader-app".into(),
                namespace: "coord-demo".into(),
                replicas: Some(3),
            }),
        }
    }

    /// The demo's leases, as `leases -A` sees them: control-plane locks, leaders with long
    /// identities, a stale lock, a pod that is gone, a skewed clock, node heartbeats.
    fn report() -> LeaseReport {
        let uuid = "6c65e70f-c5d7-4c0c-b287-dfb5f5da81e7";
        let now = Timestamp::from_second(NOW).unwrap();
        let mut rows = Vec::new();
        let mut add = |l: LeaseSnapshot, p: Option<HolderPod>| rows.push(lease_report::row(&l, now, p, vec![]));
        add(lease("kube-system", "kube-controller-manager", &format!("coord-dev_{uuid}"), 1, 15), None);
        add(lease("kube-system", "kube-scheduler", &format!("coord-dev_{uuid}"), 2, 15), None);
        let mut identity = lease(
            "kube-system",
            "apiserver-xb2k3ydg6ctwaqm5zqz6xq7l4e",
            "apiserver-xb2k3ydg6ctwaqm5zqz6xq7l4e_0e2b7c4a-3b5f-4f0e-9d44-5f0c7b3f9b11",
            4,
            3600,
        );
        identity.labels = vec![("apiserver.kubernetes.io/identity".into(), "kube-apiserver".into())];
        add(identity, None);
        add(
            lease("coord-demo", "leader-app-lock", &format!("leader-app-65dc8bc996-dkgnr_{uuid}"), 1, 3600),
            Some(pod("leader-app-65dc8bc996-dkgnr", true)),
        );
        add(
            lease("coord-demo", "orphaned-lock", &format!("leader-app-5d8f7c9b4-gq2xz_{uuid}"), 1, 3600),
            Some(pod("leader-app-5d8f7c9b4-gq2xz", false)),
        );
        add(lease("coord-demo", "stale-lock", &format!("leader-app-5d8f7c9b4-old01_{uuid}"), 29_000_000, 15), None);
        add(lease("coord-demo", "skewed-lock", "clock-ahead-host", -2_270_000_000, 15), None);
        add(lease("coord-demo", "released-lock", "", 40, 15), None);
        for n in 0..3 {
            add(lease("kube-node-lease", &format!("kwok-node-{n}"), &format!("kwok-node-{n}"), 3, 20), None);
        }
        LeaseReport::assemble(rows, (now, "server"), &|_| Some(true), false, vec![])
    }

    #[test]
    fn default_columns_fit_80_and_120_and_wide_keeps_every_column() {
        for (width, text) in crate::output::screens(|p| table(&report(), p, true, "").render(p)) {
            assert!(text.contains("3 node leases: 3 fresh (--nodes lists them)"), "{text}");
            assert!(text.contains("coord-demo/stale-lock: CO101 expired"), "{text}");
            assert!(text.contains("coord-demo/orphaned-lock: CO104 holder-pod-missing"), "{text}");
            insta::assert_snapshot!(format!("leases_all_{width}"), text);
        }
        let printer = Printer::plain(OutputFormat::Wide, None);
        let text = table(&report(), &printer, false, "coord-demo").render(&printer);
        let header = text.lines().next().unwrap();
        for column in ["CLASS", "DURATION", "TRANSITIONS", "ACQUIRED", "POD", "CONTROLLER", "CANDIDATES"] {
            assert!(header.contains(column), "{header}");
        }
        assert!(text.contains("leader-app-5d8f7c9b4-gq2xz (gone)"), "{text}");
    }
}
