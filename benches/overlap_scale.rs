//! The pure overlap analysis at scale, on a generated namespace:
//!   cargo bench --bench overlap_scale -- [CONTROLLERS] [PODS]
//! (defaults 5000 and 50000). Prints the wall time of `analyze` and what it found;
//! scripts/bench-overlap.sh adds peak memory and a second size for linearity.

use std::collections::BTreeMap;
use std::time::Instant;

use kubectl_coord::analyze::overlap::{Controller, Options, PodMeta, analyze};
use kubectl_coord::analyze::selector::parse;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let controllers = args.first().copied().unwrap_or(5000);
    let pods = args.get(1).copied().unwrap_or(50_000);
    let (cs, ps) = generate(controllers, pods);
    let start = Instant::now();
    let result = analyze(&cs, &ps, &Options { cross_kind: false, explain: false, sample: false });
    let took = start.elapsed();
    println!(
        "controllers={} pods={} analyze_ms={:.1} pairs_decided={} findings={} pdb_conflicts={}",
        cs.len(),
        ps.len(),
        took.as_secs_f64() * 1000.0,
        result.pairs_compared,
        result.findings.len(),
        result.pdb_conflicts.len()
    );
}

/// Half Deployments, half their ReplicaSets; 25 Deployments (at any size) are sloppy
/// (selects by tier only); pods spread evenly over the ReplicaSets.
fn generate(controllers: usize, pods: usize) -> (Vec<Controller>, Vec<PodMeta>) {
    let deployments = controllers / 2;
    let mut cs = Vec::with_capacity(controllers);
    for i in 0..deployments {
        let tier = ["web", "api", "worker", "db"][i % 4];
        let selector = if i % (deployments / 25).max(1) == 7 {
            format!("tier={tier}")
        } else {
            format!("app=svc-{i},tier={tier}")
        };
        let labels: BTreeMap<String, String> =
            [("app".to_string(), format!("svc-{i}")), ("tier".to_string(), tier.to_string())].into();
        cs.push(Controller {
            kind: "Deployment".into(),
            namespace: "bench".into(),
            name: format!("svc-{i}"),
            uid: format!("d-{i}"),
            selector: parse(&selector).unwrap(),
            template_labels: Some(labels.clone()),
            owner_uid: None,
        });
        let mut rs_labels = labels;
        rs_labels.insert("pod-template-hash".into(), format!("h{i}"));
        cs.push(Controller {
            kind: "ReplicaSet".into(),
            namespace: "bench".into(),
            name: format!("svc-{i}-h{i}"),
            uid: format!("rs-{i}"),
            selector: parse(&format!("{selector},pod-template-hash=h{i}")).unwrap(),
            template_labels: Some(rs_labels),
            owner_uid: Some(format!("d-{i}")),
        });
    }
    let mut ps = Vec::with_capacity(pods);
    for p in 0..pods {
        let i = p % deployments.max(1);
        let tier = ["web", "api", "worker", "db"][i % 4];
        ps.push(PodMeta {
            namespace: "bench".into(),
            name: format!("svc-{i}-h{i}-{p}"),
            labels: [
                ("app".to_string(), format!("svc-{i}")),
                ("tier".to_string(), tier.to_string()),
                ("pod-template-hash".to_string(), format!("h{i}")),
            ]
            .into_iter()
            .collect(),
            controller: Some(("ReplicaSet".into(), format!("svc-{i}-h{i}"), format!("rs-{i}"))),
        });
    }
    (cs, ps)
}
