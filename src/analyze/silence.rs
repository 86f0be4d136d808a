//! Findings a team has looked at and accepted, silenced as linters do it (Popeye's spinach
//! file, Polaris' exemptions, kube-score's ignore annotation); the plugin never writes, so
//! every mark is one the user set:
//!
//! - an annotation on the object, `kubectl-coord/ignore: CO404,CO301` (codes, mechanism
//!   names, or `*`), with an optional `kubectl-coord/ignore-reason`;
//! - an ignore file (`--ignore-file`, YAML) whose rules name codes, mechanisms, namespaces,
//!   kinds, object names (`*` globs) and a label selector, each with a reason; and types or
//!   API groups known to be unreadable (an aggregated API that is down), so that a run that
//!   could not read them can still pass a CI gate.
//!
//! Pure: the file's text, the findings and each object's marks come in; what is kept and
//! what is silenced (with why) goes out.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::check::{Finding, Mechanism};
use super::codes;
use super::selector::{self, LabelPairs, Selector};

/// The annotation naming what to ignore on its object.
pub const ANNOTATION: &str = "kubectl-coord/ignore";
/// The annotation saying why (shown with `--show-silenced`).
pub const REASON_ANNOTATION: &str = "kubectl-coord/ignore-reason";

/// An `--ignore-file`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IgnoreFile {
    #[serde(default)]
    pub ignore: Vec<Rule>,
    #[serde(default)]
    pub unreadable: Vec<Unreadable>,
}

/// Silences the findings it matches: every field given must match (a list matches when any
/// of its entries does); at least one besides `reason` must be given.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    #[serde(default)]
    pub codes: Vec<String>,
    #[serde(default)]
    pub mechanisms: Vec<Mechanism>,
    /// Namespaces, `*` globs allowed (`team-*`).
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Object kinds as the API names them (Deployment, Lease).
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Object names, `*` globs allowed.
    #[serde(default)]
    pub names: Vec<String>,
    /// A label selector on the object's labels (`app.kubernetes.io/part-of=argo-rollouts`).
    #[serde(default)]
    pub selector: Option<String>,
    pub reason: String,
}

/// A type or API group known to be unreadable: not counted against completeness.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unreadable {
    /// The API group ("" for the core group).
    pub group: String,
    /// One resource (plural) of it; all of the group when absent.
    #[serde(default)]
    pub resource: Option<String>,
    pub reason: String,
}

/// A parsed, checked ignore file: selectors compiled.
#[derive(Debug, Default)]
pub struct Rules {
    rules: Vec<(Rule, Option<Selector>)>,
    unreadable: Vec<Unreadable>,
}

/// What silencing reads of an object: its ignore annotations and, when a rule has a
/// selector, its labels.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Marks {
    pub ignore: Option<String>,
    pub reason: Option<String>,
    pub labels: LabelPairs,
}

impl Marks {
    /// Nothing to remember about the object.
    pub fn is_empty(&self) -> bool {
        self.ignore.is_none() && self.labels.iter().next().is_none()
    }
}

/// An object's `metadata.annotations` as silencing reads them: the two ignore annotations,
/// every other entry stepped over without being kept.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct IgnoreAnnotations {
    pub ignore: Option<String>,
    pub reason: Option<String>,
}

impl<'de> Deserialize<'de> for IgnoreAnnotations {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = IgnoreAnnotations;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of annotations")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<IgnoreAnnotations, A::Error> {
                let mut out = IgnoreAnnotations::default();
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Ignore => out.ignore = Some(map.next_value()?),
                        Key::Reason => out.reason = Some(map.next_value()?),
                        Key::Other => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
        }
        /// A key told apart without copying it: most objects carry annotations, few ours.
        enum Key {
            Ignore,
            Reason,
            Other,
        }
        impl<'de> Deserialize<'de> for Key {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
                struct KeyVisit;
                impl serde::de::Visitor<'_> for KeyVisit {
                    type Value = Key;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("an annotation key")
                    }
                    fn visit_str<E>(self, key: &str) -> Result<Key, E> {
                        Ok(match key {
                            ANNOTATION => Key::Ignore,
                            REASON_ANNOTATION => Key::Reason,
                            _ => Key::Other,
                        })
                    }
                }
                d.deserialize_str(KeyVisit)
            }
        }
        d.deserialize_map(Visit)
    }
}

impl IgnoreAnnotations {
    /// The object's marks, labels kept only when `labels` is Some (a rule wants them).
    pub fn marks(self, labels: Option<LabelPairs>) -> Option<Marks> {
        let m = Marks { ignore: self.ignore, reason: self.reason, labels: labels.unwrap_or_default() };
        (!m.is_empty()).then_some(m)
    }
}

/// A finding that was silenced, and by what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Silenced {
    #[serde(flatten)]
    pub finding: Finding,
    /// `annotation`, or `ignore-file rule N` (from 1).
    pub by: String,
    pub why: String,
}

/// Something that could not be read and that the ignore file accepts as unreadable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Accepted {
    pub resource: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub reason: String,
    pub why: String,
}

impl Rules {
    /// Parses and checks an ignore file's text; `Err` is one line naming what is wrong.
    pub fn parse(text: &str) -> Result<Rules, String> {
        let file: IgnoreFile = if text.trim().is_empty() {
            IgnoreFile::default()
        } else {
            serde_saphyr::from_str(text).map_err(|e| one_line(&e.to_string()))?
        };
        let mut rules = Vec::new();
        for (i, rule) in file.ignore.into_iter().enumerate() {
            let at = format!("ignore rule {}", i + 1);
            if rule.reason.trim().is_empty() {
                return Err(format!("{at}: a reason is required"));
            }
            let matchers = rule.codes.len()
                + rule.mechanisms.len()
                + rule.namespaces.len()
                + rule.kinds.len()
                + rule.names.len()
                + usize::from(rule.selector.is_some());
            if matchers == 0 {
                return Err(format!(
                    "{at}: names nothing to match (codes, mechanisms, namespaces, kinds, names, selector)"
                ));
            }
            if let Some(bad) = rule.codes.iter().find(|c| !codes::known(c)) {
                return Err(format!("{at}: unknown code {bad:?} (docs/check.md lists them)"));
            }
            let selector = match &rule.selector {
                Some(text) => Some(selector::parse(text).map_err(|e| format!("{at}: selector {text:?}: {e}"))?),
                None => None,
            };
            rules.push((rule, selector));
        }
        for (i, u) in file.unreadable.iter().enumerate() {
            if u.reason.trim().is_empty() {
                return Err(format!("unreadable entry {}: a reason is required", i + 1));
            }
        }
        Ok(Rules { rules, unreadable: file.unreadable })
    }

    /// Whether any rule needs objects' labels (else they need not be kept).
    pub fn wants_labels(&self) -> bool {
        self.rules.iter().any(|(_, s)| s.is_some())
    }

    /// Splits findings into those kept and those silenced; `marks` gives an object's marks
    /// by (namespace, kubectl TYPE/NAME). An annotation is looked at first.
    pub fn apply(
        &self,
        findings: Vec<Finding>,
        marks: &HashMap<(Option<String>, String), Marks>,
    ) -> (Vec<Finding>, Vec<Silenced>) {
        // No rule and no marked object (the usual run): nothing to look up per finding.
        if self.rules.is_empty() && marks.is_empty() {
            return (findings, Vec::new());
        }
        let (mut kept, mut silenced) = (Vec::with_capacity(findings.len()), Vec::new());
        let none = Marks::default();
        for f in findings {
            let m = marks.get(&(f.namespace.clone(), f.object.clone())).unwrap_or(&none);
            match self.why(&f, m) {
                Some((by, why)) => silenced.push(Silenced { finding: f, by, why }),
                None => kept.push(f),
            }
        }
        (kept, silenced)
    }

    fn why(&self, f: &Finding, m: &Marks) -> Option<(String, String)> {
        if let Some(list) = &m.ignore
            && annotation_names(list, f)
        {
            let why = m.reason.clone().unwrap_or_else(|| format!("{ANNOTATION}: {list}"));
            return Some(("annotation".into(), why));
        }
        self.rules
            .iter()
            .position(|(rule, selector)| rule_matches(rule, selector.as_ref(), f, &m.labels))
            .map(|i| (format!("ignore-file rule {}", i + 1), self.rules[i].0.reason.clone()))
    }

    /// The reason the file accepts a skipped `resource` (plural, plural.group, or
    /// group/version for a whole API) as unreadable, if it does.
    pub fn accepts_unreadable(&self, resource: &str) -> Option<&str> {
        let (plural, group) = split_resource(resource);
        self.unreadable
            .iter()
            .find(|u| u.group == group && u.resource.as_deref().is_none_or(|r| Some(r) == plural))
            .map(|u| u.reason.as_str())
    }
}

/// A skipped resource's plural (None for a whole API) and group: "pods" -> (pods, ""),
/// "deployments.apps" -> (deployments, apps), "metrics.k8s.io/v1beta1" -> (None, metrics.k8s.io).
fn split_resource(resource: &str) -> (Option<&str>, &str) {
    if let Some((group, _version)) = resource.split_once('/') {
        return (None, if group == "core" { "" } else { group });
    }
    match resource.split_once('.') {
        Some((plural, group)) => (Some(plural), group),
        None => (Some(resource), ""),
    }
}

/// Whether an annotation's list ("CO404, fields, *") names the finding.
fn annotation_names(list: &str, f: &Finding) -> bool {
    list.split([',', ' ']).map(str::trim).filter(|s| !s.is_empty()).any(|entry| {
        entry == "*" || entry == "all" || entry.eq_ignore_ascii_case(f.code) || entry == f.mechanism.name()
    })
}

fn rule_matches(rule: &Rule, selector: Option<&Selector>, f: &Finding, labels: &LabelPairs) -> bool {
    let any = |list: &[String], hit: &dyn Fn(&str) -> bool| list.is_empty() || list.iter().any(|x| hit(x));
    let name = f.object.split_once('/').map_or(f.object.as_str(), |(_, n)| n);
    let namespace = f.namespace.as_deref().unwrap_or("");
    any(&rule.codes, &|c| c.eq_ignore_ascii_case(f.code))
        && (rule.mechanisms.is_empty() || rule.mechanisms.contains(&f.mechanism))
        && any(&rule.namespaces, &|p| glob(p, namespace))
        && any(&rule.kinds, &|k| k.eq_ignore_ascii_case(&f.object_kind))
        && any(&rule.names, &|p| glob(p, name))
        && selector.is_none_or(|s| s.matches(labels))
}

/// `*` matches any run of characters; everything else matches itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::check::Severity;

    fn finding(code: &'static str, mechanism: Mechanism, ns: &str, kind: &str, object: &str) -> Finding {
        Finding {
            severity: Severity::Warning,
            mechanism,
            code,
            reason: "r".into(),
            namespace: (!ns.is_empty()).then(|| ns.to_string()),
            object_kind: kind.into(),
            object: object.into(),
            message: "m".into(),
            detail: "d".into(),
            file: None,
        }
    }

    fn marks(ignore: Option<&str>, labels: &[(&str, &str)]) -> Marks {
        Marks {
            ignore: ignore.map(str::to_string),
            reason: None,
            labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    #[test]
    fn globs_match_as_shells_do() {
        for (p, t, want) in [
            ("team-*", "team-a", true),
            ("team-*", "team-", true),
            ("team-*", "teamx", false),
            ("*-canary", "web-canary", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "a-b-x-c", true),
            ("a*b*c", "a-c-b", false),
            ("aa*aa", "aaa", false),
            ("web", "web", true),
            ("web", "web2", false),
            ("*", "", true),
        ] {
            assert_eq!(glob(p, t), want, "{p} ~ {t}");
        }
    }

    proptest::proptest! {
        /// The glob against a regular expression built from it.
        #[test]
        fn glob_agrees_with_a_regex(pattern in "[ab*]{0,6}", text in "[ab]{0,8}") {
            let re = format!("^{}$", pattern.split('*').map(regex::escape).collect::<Vec<_>>().join(".*"));
            let re = regex::Regex::new(&re).unwrap();
            proptest::prop_assert_eq!(glob(&pattern, &text), re.is_match(&text));
        }

        /// Whatever text an ignore file holds, parsing answers (never panics).
        #[test]
        fn any_ignore_file_parses_or_is_refused(text in "\\PC{0,80}") {
            let _ = Rules::parse(&text);
        }
    }

    const FILE: &str = r#"
ignore:
- codes: [CO404]
  namespaces: [team-*]
  reason: the HPA owns replicas; the GitOps tool ignores the field
- mechanisms: [leases]
  names: [kwok-node-*]
  reason: kwok's fake node heartbeats
- selector: app.kubernetes.io/part-of=argo-rollouts
  kinds: [ReplicaSet]
  reason: Rollouts own their ReplicaSets
unreadable:
- group: metrics.k8s.io
  reason: metrics-server is down in staging
- group: ""
  resource: secrets
  reason: not ours to read
"#;

    #[test]
    fn rules_match_every_field_they_name() {
        let rules = Rules::parse(FILE).unwrap();
        assert!(rules.wants_labels());
        let found = vec![
            finding("CO404", Mechanism::Fields, "team-a", "Deployment", "deployment.apps/web"),
            finding("CO404", Mechanism::Fields, "prod", "Deployment", "deployment.apps/web"),
            finding("CO102", Mechanism::Leases, "kube-node-lease", "Lease", "lease/kwok-node-1"),
            finding("CO102", Mechanism::Leases, "kube-node-lease", "Lease", "lease/real-node"),
            finding("CO301", Mechanism::Overlaps, "shop", "ReplicaSet", "replicaset.apps/ro-1"),
            finding("CO301", Mechanism::Overlaps, "shop", "ReplicaSet", "replicaset.apps/plain"),
            finding("CO301", Mechanism::Overlaps, "shop", "Deployment", "deployment.apps/ro-1"),
        ];
        let mut m = HashMap::new();
        let rollouts = marks(None, &[("app.kubernetes.io/part-of", "argo-rollouts")]);
        m.insert((Some("shop".to_string()), "replicaset.apps/ro-1".to_string()), rollouts.clone());
        m.insert((Some("shop".to_string()), "deployment.apps/ro-1".to_string()), rollouts);
        let (kept, silenced) = rules.apply(found, &m);
        let kept: Vec<&str> = kept.iter().map(|f| f.object.as_str()).collect();
        assert_eq!(kept, ["deployment.apps/web", "lease/real-node", "replicaset.apps/plain", "deployment.apps/ro-1"]);
        let by: Vec<(&str, &str)> = silenced.iter().map(|s| (s.finding.object.as_str(), s.by.as_str())).collect();
        assert_eq!(
            by,
            [
                ("deployment.apps/web", "ignore-file rule 1"),
                ("lease/kwok-node-1", "ignore-file rule 2"),
                ("replicaset.apps/ro-1", "ignore-file rule 3")
            ]
        );
        assert_eq!(silenced[0].why, "the HPA owns replicas; the GitOps tool ignores the field");
    }

    #[test]
    fn the_annotation_names_codes_mechanisms_or_everything() {
        let rules = Rules::default();
        let f = || finding("CO404", Mechanism::Fields, "a", "Deployment", "deployment.apps/web");
        let key = (Some("a".to_string()), "deployment.apps/web".to_string());
        for (value, silenced) in [
            ("CO404", true),
            ("co301, co404", true),
            ("fields", true),
            ("*", true),
            ("CO301,leases", false),
            ("", false),
        ] {
            let mut m = HashMap::new();
            m.insert(key.clone(), marks(Some(value), &[]));
            let (kept, s) = rules.apply(vec![f()], &m);
            assert_eq!((kept.is_empty(), s.len()), (silenced, usize::from(silenced)), "{value:?}");
        }
        let mut m = HashMap::new();
        m.insert(
            key,
            Marks { ignore: Some("CO404".into()), reason: Some("accepted in review".into()), ..Marks::default() },
        );
        let (_, s) = rules.apply(vec![f()], &m);
        assert_eq!((s[0].by.as_str(), s[0].why.as_str()), ("annotation", "accepted in review"));
    }

    #[test]
    fn unreadable_types_and_groups_are_accepted_by_group_and_resource() {
        let rules = Rules::parse(FILE).unwrap();
        assert!(rules.accepts_unreadable("metrics.k8s.io/v1beta1").is_some());
        assert!(rules.accepts_unreadable("nodes.metrics.k8s.io").is_some());
        assert_eq!(rules.accepts_unreadable("secrets"), Some("not ours to read"));
        assert!(rules.accepts_unreadable("configmaps").is_none());
        assert!(rules.accepts_unreadable("secrets.example.com").is_none());
        assert!(rules.accepts_unreadable("custom.metrics.k8s.io/v1beta2").is_none());
    }

    #[test]
    fn bad_files_are_one_line_errors() {
        for (text, says) in [
            ("ignore:\n- codes: [CO999]\n  reason: x\n", "unknown code \"CO999\""),
            ("ignore:\n- reason: everything\n", "names nothing to match"),
            ("ignore:\n- codes: [CO404]\n  reason: ''\n", "a reason is required"),
            ("ignore:\n- selector: 'a in ('\n  reason: x\n", "selector"),
            ("ignore:\n- codes: [CO404]\n  reson: typo\n", "reson"),
            ("unreadable:\n- group: metrics.k8s.io\n", "reason"),
            ("ignore: [", ""),
        ] {
            let err = Rules::parse(text).unwrap_err();
            assert!(err.contains(says) && !err.contains('\n'), "{text:?}: {err}");
        }
        assert!(Rules::parse("").unwrap().rules.is_empty());
        assert!(Rules::parse("# nothing accepted yet\n").unwrap().rules.is_empty());
    }
}
