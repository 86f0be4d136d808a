//! trace's hops from the audit log (`trace --audit-log`): for an object the log has writes of,
//! every write with its microsecond time replaces what live state says of it (a creation
//! timestamp and each manager's last managedFields entry, in whole seconds): every spec and
//! status write, not only the last, and whatever Events' hour has forgotten. Events and
//! objects the log has nothing of are as live state shows them.

use super::{Area, Request, Verb};
use crate::analyze::sequence::{Hop, HopKind, Precision, TraceSnapshot, hop, link, state_hops};

/// The timeline of `snap`, with `writes[i]` (the log's writes of object i, in time order)
/// in place of what live state says of object i: its creation when the log has the create (a
/// create with generateName names no object in the log), its managedFields entries from the
/// log's start on (`log_start`; earlier ones the log cannot replace).
pub fn timeline(snap: &TraceSnapshot, writes: &[Vec<Request>], log_start: Option<super::Micros>) -> Vec<Hop> {
    let from_log = |i: usize| writes.get(i).is_some_and(|w| w.iter().any(Request::ok));
    let created_in_log = |i: usize| writes.get(i).is_some_and(|w| w.iter().any(created));
    let start_second = log_start.map(|s| s.div_euclid(1_000_000));
    let mut hops: Vec<Hop> = state_hops(snap)
        .into_iter()
        .filter(|h| match h.source {
            "creationTimestamp" => !created_in_log(h.object),
            "managedFields" => {
                let before_log = matches!((h.time, start_second), (Some(t), Some(s)) if t.as_second() < s);
                !from_log(h.object) || before_log
            }
            _ => true,
        })
        .collect();
    for (i, requests) in writes.iter().enumerate() {
        for r in requests.iter().filter(|r| r.ok() && !r.dry_run) {
            let Some((kind, what)) = what(r) else { continue };
            let time = jiff::Timestamp::from_microsecond(r.at).ok();
            hops.push(hop(i, kind, time, Precision::Microsecond, r.writer.label(), what, "audit log"));
        }
    }
    link(snap, hops)
}

/// The kind of hop a write is, and what it did.
fn what(r: &Request) -> Option<(HopKind, String)> {
    let fields: Vec<&str> = r.body.as_deref().map(|b| b.fields.iter().map(|(p, _)| &**p).collect()).unwrap_or_default();
    let named = |prefix: &str| -> Vec<&str> { fields.iter().copied().filter(|p| p.starts_with(prefix)).collect() };
    let list = |paths: Vec<&str>| -> String {
        match paths.len() {
            0 => String::new(),
            1..=3 => paths.join(", "),
            n => format!("{} and {} more", paths[..2].join(", "), n - 2),
        }
    };
    let verb = r.verb?;
    Some(match (verb, r.area()) {
        _ if created(r) => (HopKind::Created, String::new()),
        (Verb::Delete | Verb::Deletecollection, _) => (HopKind::Deleting, "deleted".into()),
        (_, Area::Status) => (HopKind::Status, list(named(".status"))),
        (_, Area::Spec) if r.subresource.as_ref() == "scale" => (HopKind::Spec, "replicas (scale)".into()),
        (_, Area::Spec) if r.body.is_none() => (HopKind::Spec, format!("{} (the log names no fields)", verb.as_str())),
        (_, Area::Spec) => {
            let spec = named(".spec");
            if spec.is_empty() { (HopKind::Write, list(fields.clone())) } else { (HopKind::Spec, list(spec)) }
        }
        (_, Area::Other) => (HopKind::Write, format!("{} {}", verb.as_str(), r.subresource)),
    })
}

/// Whether a write created its object: a create of the main resource, or a server-side apply
/// that did (logged as a patch answered 201).
fn created(r: &Request) -> bool {
    r.subresource.is_empty() && (r.verb == Some(Verb::Create) || r.code == 201) && r.ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::history::Body;
    use crate::analyze::history::timeline::tests::req;
    use crate::analyze::sequence::TraceObject;
    use std::sync::Arc;

    #[test]
    fn writes_from_the_log_replace_whole_seconds_with_microseconds() {
        let deploy = TraceObject {
            uid: "d".into(),
            kind: "Deployment".into(),
            api_version: "apps/v1".into(),
            name: "web".into(),
            ..Default::default()
        };
        let rs = TraceObject {
            uid: "r".into(),
            kind: "ReplicaSet".into(),
            api_version: "apps/v1".into(),
            name: "web-1".into(),
            controller_uid: Some("d".into()),
            ..Default::default()
        };
        let snap = TraceSnapshot {
            objects: vec![deploy, rs],
            parent: vec![None, Some(0)],
            prefix: vec![String::new(); 2],
            events: Vec::new(),
        };
        let mut scale = req(10, "kubectl", Verb::Update, 200);
        scale.subresource = "scale".into();
        let mut created = req(10, "kcm", Verb::Create, 201);
        created.at += 12_345;
        let mut spec = req(20, "kubectl", Verb::Patch, 200);
        spec.body = Some(Box::new(Body {
            fields: vec![(Arc::from(".spec.template.spec.containers[name=c].image"), 1)],
            ..Default::default()
        }));
        let hops = timeline(&snap, &[vec![scale, spec], vec![created]], None);
        let rs_created = hops.iter().find(|h| h.object == 1 && h.kind == HopKind::Created).unwrap();
        assert_eq!(rs_created.precision, Precision::Microsecond);
        assert_eq!(rs_created.source, "audit log");
        let lag = rs_created.lag.unwrap();
        assert_eq!((lag.millis, lag.plus_minus_millis), (12, 0), "{hops:#?}");
        assert!(hops.iter().any(|h| h.kind == HopKind::Spec && h.what.contains("containers[name=c].image")));
    }
}
