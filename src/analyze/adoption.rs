//! Which live pods a controller would adopt once applied: pods in its namespace that its
//! selector matches and no controller owns. The controllers that claim pods
//! (ReplicaSet, ReplicationController, StatefulSet, DaemonSet, Job) take such orphans as
//! their own: they count toward its replicas (a ReplicaSet deletes the surplus), and the
//! garbage collector deletes them with it. A Deployment claims ReplicaSets, not pods; a
//! PodDisruptionBudget claims nothing (pods under several budgets are `overlap`'s).

use super::overlap::{Controller, PodMeta};

/// The kinds whose controllers adopt orphan pods their selector matches.
pub const CLAIMS_PODS: &[&str] = &["ReplicaSet", "ReplicationController", "StatefulSet", "DaemonSet", "Job"];

#[derive(Debug, Clone)]
pub struct Adoption<'a> {
    pub controller: &'a Controller,
    /// The orphans' names, sorted.
    pub pods: Vec<&'a str>,
}

/// The adoptions `controllers` (those `wanted`) would make among `pods`.
pub fn adoptions<'a>(
    controllers: &'a [Controller],
    pods: &'a [PodMeta],
    wanted: impl Fn(&Controller) -> bool,
) -> Vec<Adoption<'a>> {
    let mut out = Vec::new();
    for c in controllers.iter().filter(|c| CLAIMS_PODS.contains(&c.kind.as_str()) && wanted(c)) {
        let mut orphans: Vec<&str> = pods
            .iter()
            .filter(|p| p.controller.is_none() && *p.namespace == *c.namespace && c.selector.matches(&p.labels))
            .map(|p| p.name.as_str())
            .collect();
        if orphans.is_empty() {
            continue;
        }
        orphans.sort_unstable();
        out.push(Adoption { controller: c, pods: orphans });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::overlap::tests::{ctl_in, pod_in};

    #[test]
    fn only_orphans_in_its_namespace_that_it_selects_and_only_by_kinds_that_claim_pods() {
        let controllers = [
            ctl_in("shop", "ReplicaSet", "web", "app=web", None),
            ctl_in("shop", "Deployment", "web-deploy", "app=web", None),
            ctl_in("shop", "StatefulSet", "db", "app=db", None),
            ctl_in("shop", "Job", "skipped", "app=web", None),
        ];
        let pods = [
            pod_in("shop", "web-b", &[("app", "web")], None),
            pod_in("shop", "web-a", &[("app", "web"), ("v", "1")], None),
            pod_in("shop", "owned", &[("app", "web")], Some("other")),
            pod_in("elsewhere", "web-far", &[("app", "web")], None),
            pod_in("shop", "cache", &[("app", "cache")], None),
        ];
        let found = adoptions(&controllers, &pods, |c| c.name != "skipped");
        let got: Vec<(&str, Vec<&str>)> = found.iter().map(|a| (a.controller.name.as_str(), a.pods.clone())).collect();
        assert_eq!(got, [("web", vec!["web-a", "web-b"])]);
    }
}
