//! Which fields applying a manifest would take from another manager, read from the live
//! object's managedFields alone (no write, not even a dry run): a field another manager owns
//! that the manifest sets to another value. Server-side apply refuses such a field as a
//! conflict unless forced; client-side apply (and a forced apply) overwrites it, and a
//! writer that still wants its value writes it back: a fight (an HPA's spec.replicas under
//! a manifest that sets replicas is the classic one).

use serde_json::Value;

use super::fields::Entry;
use super::fieldsv1::Element;

/// The managers `kubectl apply` writes as when no --field-manager is given: server-side,
/// and client-side (whose fields a server-side apply by kubectl takes over without conflict).
pub const KUBECTL_MANAGERS: &[&str] = &["kubectl", "kubectl-client-side-apply"];

/// The fields one manager would lose.
#[derive(Debug, Clone, PartialEq)]
pub struct Taken {
    /// "keda-operator", "kube-controller-manager (scale)".
    pub manager: String,
    pub operation: String,
    /// Each field's path, its live value and the manifest's.
    pub fields: Vec<(String, Value, Value)>,
}

/// The fields of `live` (its managedFields decoded into `entries`) that `manifest` sets to
/// another value, by the manager that owns them, leaving out `appliers`' own. Only leaves are
/// compared: a map or granular list someone owns is compared field by field below it.
/// Status is left out: an apply to the main resource does not write it.
pub fn taken(entries: &[Entry], live: &Value, manifest: &Value, appliers: &[&str]) -> Vec<Taken> {
    let mut out = Vec::new();
    for e in entries.iter().filter(|e| !appliers.contains(&e.manager.as_str()) && e.subresource != "status") {
        let mut fields = Vec::new();
        for (i, path) in e.paths.iter().enumerate() {
            // Sorted paths: a path with children is followed by the first of them.
            if e.paths.get(i + 1).is_some_and(|next| next.starts_with(path)) {
                continue;
            }
            if matches!(path.0.first(), Some(Element::Field(f)) if &**f == "status") {
                continue;
            }
            let text = path.to_string();
            let (Some(theirs), Some(mine)) = (path.lookup(live), path.lookup(manifest)) else { continue };
            if theirs != mine && !equal_quantities(theirs, mine) {
                fields.push((text, theirs.clone(), mine.clone()));
            }
        }
        if !fields.is_empty() {
            out.push(Taken { manager: e.label(), operation: e.operation.clone(), fields });
        }
    }
    out
}

/// 3 and "3" are one value to a manifest author (an int-or-string, a quantity written either
/// way); the server would not see a change.
fn equal_quantities(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(n), Value::String(s)) | (Value::String(s), Value::Number(n)) => n.to_string() == *s,
        _ => false,
    }
}

/// The fields a server-side apply was refused for, from the 409's causes: (field, "conflict
/// with \"MANAGER\"[ with subresource \"SUB\"][ using VERSION[ at TIME]]"), where "using"
/// marks an Update manager. By manager, leaving out `appliers`' own, each field with its live
/// and its manifest value where `entries` (the live object's managedFields) locate it (null
/// both where not).
pub fn conflicts(
    entries: &[Entry],
    live: &Value,
    manifest: &Value,
    causes: &[(String, String)],
    appliers: &[&str],
) -> Vec<Taken> {
    let mut out: Vec<Taken> = Vec::new();
    for (field, message) in causes {
        let Some((manager, subresource, operation)) = conflict_manager(message) else { continue };
        if appliers.contains(&manager.as_str()) {
            continue;
        }
        let wanted = unquoted(field);
        let owned = entries
            .iter()
            .filter(|e| e.manager == manager && e.subresource == subresource && e.operation == operation)
            .flat_map(|e| &e.paths)
            .find(|p| unquoted(&p.to_string()) == wanted);
        let value = |object: &Value| owned.and_then(|p| p.lookup(object)).cloned().unwrap_or(Value::Null);
        let label = super::fields::manager_label(&manager, &subresource);
        let at = match out.iter().position(|t| t.manager == label && t.operation == operation) {
            Some(i) => i,
            None => {
                out.push(Taken { manager: label, operation: operation.to_string(), fields: Vec::new() });
                out.len() - 1
            }
        };
        out[at].fields.push((field.clone(), value(live), value(manifest)));
    }
    out
}

/// A field path without its quotes: the server writes `[name="web"]` where
/// [FieldPath]'s Display writes `[name=web]`.
fn unquoted(path: &str) -> String {
    path.replace('"', "")
}

/// (manager, subresource, operation) from a conflict cause's message, as the API server
/// prints a manager (Go's %q quoting).
fn conflict_manager(message: &str) -> Option<(String, String, &'static str)> {
    let rest = message.strip_prefix("conflict with ")?;
    let (manager, rest) = quoted(rest)?;
    let (subresource, rest) = match rest.strip_prefix(" with subresource ") {
        Some(r) => quoted(r)?,
        None => (String::new(), rest),
    };
    let operation = if rest.starts_with(" using ") { "Update" } else { "Apply" };
    Some((manager, subresource, operation))
}

/// A Go %q string at the start of `text`, unquoted, and what follows it.
fn quoted(text: &str) -> Option<(String, &str)> {
    let mut chars = text.strip_prefix('"')?.char_indices();
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &text[i + 2..])),
            '\\' => out.push(chars.next()?.1),
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fieldsv1::decode;
    use serde_json::json;

    fn entry(manager: &str, operation: &str, subresource: &str, fields: Value) -> Entry {
        Entry {
            manager: manager.into(),
            operation: operation.into(),
            subresource: subresource.into(),
            api_version: "apps/v1".into(),
            time: None,
            paths: decode(&fields).unwrap(),
        }
    }

    /// The HPA's replicas and a sidecar's image are taken; a field set to the live value, a
    /// field of kubectl's own and status are not.
    #[test]
    fn fields_set_to_other_values_that_others_own() {
        let live = json!({
            "spec": {"replicas": 7, "template": {"spec": {"containers": [
                {"name": "web", "image": "web:1"}, {"name": "proxy", "image": "proxy:1"}]}}},
            "status": {"replicas": 7}
        });
        let manifest = json!({
            "spec": {"replicas": 3, "template": {"spec": {"containers": [
                {"name": "web", "image": "web:2"}, {"name": "proxy", "image": "proxy:1"}]}}},
            "status": {"replicas": 0}
        });
        let entries = [
            entry(
                "kubectl",
                "Apply",
                "",
                json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}),
            ),
            entry("kube-controller-manager", "Update", "scale", json!({"f:spec": {"f:replicas": {}}})),
            entry(
                "mesh-injector",
                "Update",
                "",
                json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"proxy\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}),
            ),
            entry("kube-controller-manager", "Update", "status", json!({"f:status": {"f:replicas": {}}})),
        ];
        let found = taken(&entries, &live, &manifest, KUBECTL_MANAGERS);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].manager, "kube-controller-manager (scale)");
        assert_eq!(found[0].fields, [(".spec.replicas".to_string(), json!(7), json!(3))]);
    }

    #[test]
    fn numbers_written_as_strings_are_the_same_value() {
        let entries = [entry("gitops", "Apply", "", json!({"f:spec": {"f:port": {}}}))];
        assert!(taken(&entries, &json!({"spec": {"port": 80}}), &json!({"spec": {"port": "80"}}), &[]).is_empty());
        assert_eq!(taken(&entries, &json!({"spec": {"port": 80}}), &json!({"spec": {"port": 81}}), &[]).len(), 1);
    }

    /// A 409's causes, as the API server writes them, become the fields each manager loses,
    /// with their values located through managedFields; the appliers' own are left out.
    #[test]
    fn a_refused_apply_names_what_each_manager_would_lose() {
        let entries = vec![
            entry("autoscaler", "Update", "scale", json!({"f:spec": {"f:replicas": {}}})),
            entry("gitops", "Apply", "", json!({"f:spec": {"f:paused": {}}})),
        ];
        let live = json!({"spec": {"replicas": 5, "paused": false}});
        let manifest = json!({"spec": {"replicas": 2, "paused": true}});
        let causes = vec![
            (
                ".spec.replicas".to_string(),
                r#"conflict with "autoscaler" with subresource "scale" using apps/v1 at 2026-12-08T02:00:00Z"#
                    .to_string(),
            ),
            (".spec.paused".to_string(), r#"conflict with "gitops""#.to_string()),
            (
                ".spec.minReadySeconds".to_string(),
                r#"conflict with "kubectl-client-side-apply" using apps/v1"#.to_string(),
            ),
            (".spec.x".to_string(), "not a conflict message".to_string()),
        ];
        let taken = conflicts(&entries, &live, &manifest, &causes, KUBECTL_MANAGERS);
        assert_eq!(
            taken,
            vec![
                Taken {
                    manager: "autoscaler (scale)".into(),
                    operation: "Update".into(),
                    fields: vec![(".spec.replicas".into(), json!(5), json!(2))],
                },
                Taken {
                    manager: "gitops".into(),
                    operation: "Apply".into(),
                    fields: vec![(".spec.paused".into(), json!(false), json!(true))],
                },
            ]
        );
        assert_eq!(
            conflict_manager(r#"conflict with "a \"b\"" using v1"#),
            Some((r#"a "b""#.into(), String::new(), "Update"))
        );
    }
}
