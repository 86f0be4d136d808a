//! `fields --watch`: owner changes per field over successive managedFields, and the
//! fields whose owner flips back and forth, which is managers fighting. Pure.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

/// A field's owners: sorted manager labels ("gitops", "kubectl (scale)").
pub type Owners = Vec<String>;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub path: String,
    pub from: Owners,
    pub to: Owners,
    /// How many times this field's owners have changed so far.
    pub changes: usize,
    /// The new owners held this field before, and someone else took it in between.
    pub fight: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Fight {
    pub path: String,
    pub managers: Vec<String>,
    pub changes: usize,
}

#[derive(Debug, Default)]
pub struct FieldWatch {
    current: Option<BTreeMap<String, Owners>>,
    /// Every owner set each field has had, in order (consecutive ones differ).
    history: BTreeMap<String, Vec<Owners>>,
}

impl FieldWatch {
    /// Takes one observation of the object; returns the fields whose owners changed
    /// since the last one (none for the first, which is the baseline).
    pub fn observe(&mut self, now: BTreeMap<String, Owners>) -> Vec<Change> {
        let Some(before) = self.current.replace(now) else {
            let now = self.current.as_ref().expect("just set");
            for (path, owners) in now {
                self.history.insert(path.clone(), vec![owners.clone()]);
            }
            return Vec::new();
        };
        let now = self.current.as_ref().expect("just set");
        let paths: BTreeSet<&String> = before.keys().chain(now.keys()).collect();
        let mut changes = Vec::new();
        for path in paths {
            let from = before.get(path).cloned().unwrap_or_default();
            let to = now.get(path).cloned().unwrap_or_default();
            if from == to {
                continue;
            }
            let history = self.history.entry(path.clone()).or_insert_with(|| vec![from.clone()]);
            history.push(to.clone());
            let fight = took_back(history);
            changes.push(Change { path: path.clone(), from, to, changes: history.len() - 1, fight });
        }
        changes
    }

    /// Fields whose owners came back to an earlier set after someone else held them.
    pub fn fights(&self) -> Vec<Fight> {
        self.history
            .iter()
            .filter(|(_, h)| (1..=h.len()).any(|k| took_back(&h[..k])))
            .map(|(path, h)| Fight {
                path: path.clone(),
                managers: h.iter().flatten().cloned().collect::<BTreeSet<_>>().into_iter().collect(),
                changes: h.len() - 1,
            })
            .collect()
    }
}

/// The last owners in `h` held the field before, and another manager held it in between.
/// Compared by manager name: a field moving between two entries of one manager
/// ("kubectl" and "kubectl (scale)") is not a fight.
fn took_back(h: &[Owners]) -> bool {
    let names: Vec<BTreeSet<&str>> = h.iter().map(|o| o.iter().map(|l| manager_of(l)).collect()).collect();
    let Some((last, before)) = names.split_last() else { return false };
    !last.is_empty()
        && before
            .iter()
            .rposition(|o| o == last)
            .is_some_and(|j| before[j + 1..].iter().any(|o| !o.is_empty() && o != last))
}

/// The manager name in a label ("kubectl (scale)" -> "kubectl").
fn manager_of(label: &str) -> &str {
    label.split_once(" (").map_or(label, |(m, _)| m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moving_between_entries_of_one_manager_is_not_a_fight() {
        let mut w = FieldWatch::default();
        w.observe(state(&[(".spec.replicas", &["kubectl"])]));
        w.observe(state(&[(".spec.replicas", &["kubectl (scale)"])]));
        let c = w.observe(state(&[(".spec.replicas", &["kubectl"])]));
        assert!(!c[0].fight, "{c:?}");
        assert!(w.fights().is_empty());
    }

    fn state(pairs: &[(&str, &[&str])]) -> BTreeMap<String, Owners> {
        pairs.iter().map(|(p, o)| (p.to_string(), o.iter().map(|s| s.to_string()).collect())).collect()
    }

    #[test]
    fn the_replicas_fight() {
        let mut w = FieldWatch::default();
        let gitops = state(&[(".spec.replicas", &["gitops"]), (".spec.template", &["gitops"])]);
        let scaled = state(&[(".spec.replicas", &["kubectl (scale)"]), (".spec.template", &["gitops"])]);
        assert!(w.observe(gitops.clone()).is_empty(), "the first observation is the baseline");
        assert!(w.observe(gitops.clone()).is_empty(), "no change, nothing to say");
        let c = w.observe(scaled.clone());
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].from.clone(), c[0].to.clone()), (vec!["gitops".into()], vec!["kubectl (scale)".into()]));
        assert!(!c[0].fight && c[0].changes == 1);
        assert!(w.fights().is_empty(), "one takeover is not yet a fight");
        let c = w.observe(gitops.clone());
        assert!(c[0].fight && c[0].changes == 2, "{c:?}");
        w.observe(scaled);
        assert_eq!(
            w.fights(),
            vec![Fight {
                path: ".spec.replicas".into(),
                managers: vec!["gitops".into(), "kubectl (scale)".into()],
                changes: 3
            }]
        );
    }

    #[test]
    fn fields_appearing_and_disappearing() {
        let mut w = FieldWatch::default();
        w.observe(state(&[(".a", &["x"])]));
        let c = w.observe(state(&[(".b", &["y"])]));
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].path.as_str(), c[0].to.is_empty()), (".a", true));
        assert_eq!((c[1].path.as_str(), c[1].from.is_empty()), (".b", true));
        // Losing every owner and regaining it is not a fight: nobody else held the field.
        let c = w.observe(state(&[(".a", &["x"]), (".b", &["y"])]));
        assert_eq!(c.len(), 1);
        assert!(!c[0].fight && c[0].changes == 2, "{c:?}");
        assert!(w.fights().is_empty());
        w.observe(state(&[(".a", &["z"]), (".b", &["y"])]));
        let c = w.observe(state(&[(".a", &["x"]), (".b", &["y"])]));
        assert!(c[0].fight, "z held .a in between: {c:?}");
        assert_eq!(w.fights()[0].managers, vec!["x".to_string(), "z".to_string()]);
    }
}
