//! kubectl-style object arguments (`deploy/x`, `deployment x y`, `deployments.apps/x`,
//! short names, kinds, CRDs) parsed and resolved against discovered resources. Pure.

pub use crate::snapshot::ApiResource;
use crate::snapshot::Discovered;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectArg {
    pub type_name: String,
    pub name: String,
}

/// `TYPE/NAME ...` or `TYPE NAME ...`.
pub fn parse_args(args: &[String]) -> Result<Vec<ObjectArg>, String> {
    let Some(first) = args.first() else {
        return Err("no object given: use TYPE/NAME or TYPE NAME".into());
    };
    let mut out = Vec::new();
    if first.contains('/') {
        for a in args {
            let parts: Vec<&str> = a.split('/').collect();
            match parts[..] {
                ["", _] => return Err(format!("{a:?}: the resource type is empty")),
                [_, ""] => return Err(format!("{a:?}: the name is empty")),
                [t, n] => out.push(ObjectArg { type_name: t.to_string(), name: check_name(n)?.to_string() }),
                [_] => {
                    return Err(format!("{a:?}: mix of TYPE/NAME and plain names; use TYPE/NAME for every object"));
                }
                _ => return Err(format!("{a:?}: expected TYPE/NAME with one '/'")),
            }
        }
    } else {
        if args.len() < 2 {
            return Err(format!("{first:?}: a name is needed (TYPE NAME or TYPE/NAME)"));
        }
        check_type(first)?;
        for n in &args[1..] {
            if n.contains('/') {
                return Err(format!("{n:?}: give either TYPE NAME... or TYPE/NAME..., not both"));
            }
            out.push(ObjectArg { type_name: first.clone(), name: check_name(n)?.to_string() });
        }
    }
    for o in &out {
        check_type(&o.type_name)?;
    }
    Ok(out)
}

fn check_type(t: &str) -> Result<&str, String> {
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-') {
        return Err(format!("{t:?} is not a resource type"));
    }
    Ok(t)
}

fn check_name(n: &str) -> Result<&str, String> {
    if n.is_empty() || n.len() > 253 || n.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{n:?} is not a valid object name"));
    }
    Ok(n)
}

/// Resolves a type (plural, singular, short name or kind, optionally `.group` or
/// `.version.group` qualified) to one resource; ambiguity lists the candidates.
pub fn resolve<'a>(type_name: &str, resources: &'a [ApiResource]) -> Result<&'a ApiResource, String> {
    let lower = type_name.to_lowercase();
    let mut candidates: Vec<&ApiResource> = resources
        .iter()
        .filter(|r| {
            let names = [r.plural.as_str(), r.singular.as_str(), &r.kind.to_lowercase()]
                .into_iter()
                .map(str::to_string)
                .chain(r.short_names.iter().map(|s| s.to_lowercase()))
                .collect::<Vec<_>>();
            names.iter().any(|n| {
                !n.is_empty()
                    && (lower == *n
                        || (!r.group.is_empty() && lower == format!("{n}.{}", r.group))
                        || lower == format!("{n}.{}.{}", r.version, r.group).trim_end_matches('.'))
            })
        })
        .collect();
    // One entry per group and resource: the preferred version (or the first seen).
    candidates.sort_by_key(|r| (r.group.clone(), r.plural.clone(), !r.preferred));
    candidates.dedup_by(|b, a| a.group == b.group && a.plural == b.plural);
    match candidates.len() {
        0 => Err(format!("the server does not serve a resource type {type_name:?}")),
        1 => Ok(candidates[0]),
        _ => {
            // Like kubectl, the core group and the built-in groups win over CRDs sharing a short name.
            if let Some(builtin) = candidates.iter().find(|r| r.group.is_empty() || r.group == "apps") {
                return Ok(builtin);
            }
            let names: Vec<String> = candidates.iter().map(|r| r.qualified_name()).collect();
            Err(format!("{type_name:?} is ambiguous: {}", names.join(", ")))
        }
    }
}

/// A built-in resource: (group, version, plural, kind, short names, namespaced).
type Builtin = (&'static str, &'static str, &'static str, &'static str, &'static [&'static str], bool);

/// The built-in resources a cluster of this version serves, for resolving TYPE/NAME with no
/// cluster to ask (`history` reads a log, not the API).
const BUILTIN: &[Builtin] = &[
    ("", "v1", "pods", "Pod", &["po"], true),
    ("", "v1", "services", "Service", &["svc"], true),
    ("", "v1", "configmaps", "ConfigMap", &["cm"], true),
    ("", "v1", "secrets", "Secret", &[], true),
    ("", "v1", "serviceaccounts", "ServiceAccount", &["sa"], true),
    ("", "v1", "endpoints", "Endpoints", &["ep"], true),
    ("", "v1", "events", "Event", &["ev"], true),
    ("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", &["pvc"], true),
    ("", "v1", "replicationcontrollers", "ReplicationController", &["rc"], true),
    ("", "v1", "resourcequotas", "ResourceQuota", &["quota"], true),
    ("", "v1", "limitranges", "LimitRange", &["limits"], true),
    ("", "v1", "nodes", "Node", &["no"], false),
    ("", "v1", "namespaces", "Namespace", &["ns"], false),
    ("", "v1", "persistentvolumes", "PersistentVolume", &["pv"], false),
    ("apps", "v1", "deployments", "Deployment", &["deploy"], true),
    ("apps", "v1", "replicasets", "ReplicaSet", &["rs"], true),
    ("apps", "v1", "statefulsets", "StatefulSet", &["sts"], true),
    ("apps", "v1", "daemonsets", "DaemonSet", &["ds"], true),
    ("apps", "v1", "controllerrevisions", "ControllerRevision", &[], true),
    ("batch", "v1", "jobs", "Job", &[], true),
    ("batch", "v1", "cronjobs", "CronJob", &["cj"], true),
    ("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", &["hpa"], true),
    ("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", &["pdb"], true),
    ("coordination.k8s.io", "v1", "leases", "Lease", &[], true),
    ("coordination.k8s.io", "v1beta1", "leasecandidates", "LeaseCandidate", &[], true),
    ("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", &[], true),
    ("networking.k8s.io", "v1", "ingresses", "Ingress", &["ing"], true),
    ("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", &["netpol"], true),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role", &[], true),
    ("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", &[], true),
    ("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", &[], false),
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", &[], false),
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", &["crd", "crds"], false),
    (
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        &[],
        false,
    ),
    ("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", &[], false),
    ("storage.k8s.io", "v1", "storageclasses", "StorageClass", &["sc"], false),
    ("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", &["pc"], false),
    ("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema", &[], false),
    ("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", &[], false),
];

/// [`BUILTIN`] as resources.
pub fn builtin() -> Vec<ApiResource> {
    BUILTIN
        .iter()
        .map(|(group, version, plural, kind, short, namespaced)| ApiResource {
            group: group.to_string(),
            version: version.to_string(),
            plural: plural.to_string(),
            singular: kind.to_lowercase(),
            kind: kind.to_string(),
            short_names: short.iter().map(|s| s.to_string()).collect(),
            namespaced: *namespaced,
            verbs: vec!["get".into(), "list".into(), "watch".into()],
            preferred: true,
        })
        .collect()
}

/// A type with no cluster to ask: a built-in one by any of its names, else `plural.group`
/// taken as written (a custom resource: `scaledobjects.keda.sh`), namespaced.
pub fn resolve_offline(type_name: &str) -> ApiResource {
    let known = builtin();
    if let Ok(r) = resolve(type_name, &known) {
        return r.clone();
    }
    let lower = type_name.to_lowercase();
    let (plural, group) = lower.split_once('.').unwrap_or((&lower, ""));
    ApiResource {
        group: group.to_string(),
        version: String::new(),
        plural: plural.to_string(),
        singular: String::new(),
        kind: kind_guess(plural),
        short_names: Vec::new(),
        namespaced: true,
        verbs: Vec::new(),
        preferred: true,
    }
}

/// The kind of a resource with no cluster to ask: a built-in's, else the plural made
/// singular and capitalised (widgets -> Widget).
pub fn kind_offline(group: &str, plural: &str) -> String {
    BUILTIN
        .iter()
        .find(|(g, _, p, ..)| *g == group && *p == plural)
        .map(|(.., kind, _, _)| kind.to_string())
        .unwrap_or_else(|| kind_guess(plural))
}

fn kind_guess(plural: &str) -> String {
    let singular = plural.strip_suffix("ies").map(|s| format!("{s}y")).unwrap_or_else(|| {
        plural
            .strip_suffix("ses")
            .map(|s| format!("{s}s"))
            .unwrap_or_else(|| plural.strip_suffix('s').unwrap_or(plural).to_string())
    });
    let mut chars = singular.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

impl Discovered {
    /// Resolves a user's TYPE (kubectl's rules); one that an unavailable API serves fails
    /// naming that API (a cluster error, exit 1), one unknown is bad input (exit 2).
    pub fn resolve(&self, type_name: &str) -> anyhow::Result<&ApiResource> {
        let err = match resolve(type_name, &self.resources) {
            Ok(r) => return Ok(r),
            Err(e) => e,
        };
        let group = type_name.split_once('.').map(|(_, g)| g);
        for u in &self.unavailable {
            let served = resolve(type_name, &u.resources).is_ok();
            let named = group.is_some_and(|g| u.group_version.split('/').next() == Some(g));
            if served || named {
                anyhow::bail!(
                    "cannot read {type_name}: {} is unavailable (its API server does not answer)",
                    u.group_version
                );
            }
        }
        // A short name an unavailable API serves is unknown while it does not answer (the
        // API server keeps no resources for it): the cluster's fault as much as the user's.
        if !self.unavailable.is_empty() {
            let apis: Vec<&str> = self.unavailable.iter().map(|u| u.group_version.as_str()).collect();
            anyhow::bail!(
                "{err}, or it is served by {}, which is unavailable (its API server does not answer)",
                apis.join(", ")
            );
        }
        Err(crate::error::usage(err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_resolve_without_a_cluster() {
        let d = resolve_offline("deploy");
        assert_eq!((d.group.as_str(), d.plural.as_str(), d.namespaced), ("apps", "deployments", true));
        assert!(!resolve_offline("nodes").namespaced);
        let so = resolve_offline("scaledobjects.keda.sh");
        assert_eq!(
            (so.group.as_str(), so.plural.as_str(), so.kind.as_str()),
            ("keda.sh", "scaledobjects", "Scaledobject")
        );
        assert_eq!(kind_offline("apps", "deployments"), "Deployment");
        assert_eq!(kind_offline("example.com", "policies"), "Policy");
    }

    fn res(group: &str, version: &str, plural: &str, kind: &str, short: &[&str], preferred: bool) -> ApiResource {
        ApiResource {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            short_names: short.iter().map(|s| s.to_string()).collect(),
            namespaced: true,
            verbs: vec!["get".into(), "list".into()],
            preferred,
        }
    }

    fn catalogue() -> Vec<ApiResource> {
        vec![
            res("", "v1", "pods", "Pod", &["po"], true),
            res("apps", "v1", "deployments", "Deployment", &["deploy"], true),
            res("example.com", "v1", "widgets", "Widget", &["wd"], true),
            res("example.com", "v1beta1", "widgets", "Widget", &["wd"], false),
            res("other.io", "v1", "widgets", "Widget", &["wd"], true),
            res("metrics.k8s.io", "v1beta1", "pods", "PodMetrics", &[], true),
        ]
    }

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_kubectl_forms() {
        assert_eq!(parse_args(&args(&["deploy/x", "rs/y"])).unwrap().len(), 2);
        let two = parse_args(&args(&["deployment", "a", "b"])).unwrap();
        assert_eq!(two[1], ObjectArg { type_name: "deployment".into(), name: "b".into() });
        for (bad, want) in [
            (vec!["deploy/"], "the name is empty"),
            (vec!["/x"], "the resource type is empty"),
            (vec!["a/b/c"], "one '/'"),
            (vec!["deploy/my app"], "not a valid object name"),
            (vec!["deploy"], "a name is needed"),
            (vec!["deploy/x", "y"], "mix of TYPE/NAME"),
            (vec!["deploy", "x/y"], "not both"),
            (vec!["de ploy/x"], "is not a resource type"),
            (vec![], "no object given"),
        ] {
            let e = parse_args(&args(&bad)).unwrap_err();
            assert!(e.contains(want), "{bad:?}: {e}");
        }
    }

    #[test]
    fn resolves_names_kinds_short_names_and_groups() {
        let c = catalogue();
        for t in [
            "deploy",
            "deployment",
            "deployments",
            "Deployment",
            "deployments.apps",
            "deployment.apps",
            "deployments.v1.apps",
        ] {
            assert_eq!(resolve(t, &c).unwrap().plural, "deployments", "{t}");
        }
        assert_eq!(resolve("po", &c).unwrap().group, "", "core wins over metrics");
        assert_eq!(resolve("widgets.example.com", &c).unwrap().version, "v1", "preferred version");
        assert_eq!(resolve("widgets.v1beta1.example.com", &c).unwrap().version, "v1beta1");
        let e = resolve("wd", &c).unwrap_err();
        assert!(e.contains("ambiguous") && e.contains("widgets.example.com") && e.contains("widgets.other.io"), "{e}");
        assert!(resolve("gadgets", &c).unwrap_err().contains("does not serve"));
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parsing_is_total(words in proptest::collection::vec("\\PC{0,20}", 0..4)) {
            let _ = parse_args(&words);
        }

        #[test]
        fn valid_arguments_round_trip(t in "[a-z][a-z0-9.-]{0,20}", names in proptest::collection::vec("[a-z0-9][a-z0-9.-]{0,30}", 1..4)) {
            let slashed: Vec<String> = names.iter().map(|n| format!("{t}/{n}")).collect();
            let spaced: Vec<String> = std::iter::once(t.clone()).chain(names.iter().cloned()).collect();
            for form in [slashed, spaced] {
                let parsed = parse_args(&form).unwrap();
                let got: Vec<(String, String)> = parsed.into_iter().map(|o| (o.type_name, o.name)).collect();
                let want: Vec<(String, String)> = names.iter().map(|n| (t.clone(), n.clone())).collect();
                prop_assert_eq!(got, want);
            }
        }
    }
}
