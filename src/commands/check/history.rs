//! check's history mechanism (`check --audit-log`): the audit log's findings over its window,
//! with what the live cluster knows that the log may not say: each Lease's duration (for
//! renewal gaps at Metadata level) and who owns what (for reaction lags without bodies).

use crate::analyze::check::Finding;
use crate::analyze::history::ObjectKey;
use crate::analyze::history::findings::Accumulator;
use crate::analyze::history::verdicts::{self, Naming};
use crate::analyze::lease::LeaseSnapshot;
use crate::analyze::owner_graph::Graph;
use crate::analyze::resource_ref::{ApiResource, kind_offline};
use crate::commands::owners::fetch::Skipped;

/// What the live snapshot tells the log's reading.
pub struct Hints {
    durations: Vec<(ObjectKey, i32)>,
    owners: Vec<(ObjectKey, ObjectKey)>,
}

/// Lease durations and controller owners, keyed as the audit log names objects.
pub fn hints(leases: &[LeaseSnapshot], graph: &Graph, resources: &[ApiResource]) -> Hints {
    let plural: std::collections::HashMap<(&str, &str), &str> =
        resources.iter().map(|r| ((r.group.as_str(), r.kind.as_str()), r.plural.as_str())).collect();
    let key = |group: &str, kind: &str, namespace: Option<&str>, name: &str| -> Option<ObjectKey> {
        Some(ObjectKey {
            group: group.into(),
            resource: (*plural.get(&(group, kind))?).into(),
            namespace: namespace.unwrap_or_default().into(),
            name: name.into(),
        })
    };
    let durations = leases
        .iter()
        .filter_map(|l| Some((key("coordination.k8s.io", "Lease", Some(&l.namespace), &l.name)?, l.duration_seconds?)))
        .collect();
    let owners = graph
        .objects
        .iter()
        .filter_map(|o| {
            let owner = o.owner_refs.iter().find(|r| r.is_controller())?;
            let owner_group = crate::analyze::owner_graph::group_of(&owner.api_version);
            let child = key(o.group(), &o.kind, o.namespace.as_deref(), &o.name)?;
            let parent = key(owner_group, &owner.kind, o.namespace.as_deref(), &owner.name)?;
            Some((child, parent))
        })
        .collect();
    Hints { durations, owners }
}

/// What the log's reading adds to the check.
pub struct Read {
    /// Objects written, by resource.
    pub objects: std::collections::BTreeMap<String, usize>,
    pub findings: Vec<Finding>,
    pub skipped: Vec<Skipped>,
    pub notes: Vec<String>,
}

pub fn findings(
    args: &super::CheckArgs,
    hints: Hints,
    namespace: Option<&str>,
    resources: &[ApiResource],
) -> anyhow::Result<Read> {
    let mut acc = Accumulator::new(args.window.settings());
    acc.know_durations(hints.durations);
    acc.know_owners(hints.owners);
    let (summary, report) =
        crate::commands::history::window_findings_with(&args.audit_log, &args.window, namespace, acc, |_| {})?;
    let kinds: std::collections::HashMap<(&str, &str), &str> =
        resources.iter().map(|r| ((r.group.as_str(), r.plural.as_str()), r.kind.as_str())).collect();
    let kind_of = |group: &str, resource: &str| -> String {
        kinds.get(&(group, resource)).map_or_else(|| kind_offline(group, resource), |k| k.to_string())
    };
    let log_args = crate::commands::history::log_args(&args.audit_log);
    let naming = Naming { kind_of: &kind_of, log_args: &log_args };
    let mut notes: Vec<String> = summary.skipped.line().into_iter().collect();
    let skipped = summary
        .not_audit
        .iter()
        .map(|input| Skipped {
            resource: format!("audit log {input}"),
            namespace: None,
            reason: "not an audit log".into(),
        })
        .collect();
    if summary.counts.events > 0 && summary.counts.events == summary.counts.earlier_stages {
        notes.push("the audit log holds only RequestReceived or ResponseStarted stages: no request's answer".into());
    }
    Ok(Read { objects: report.objects.clone(), findings: verdicts::findings(&report, &naming), skipped, notes })
}
