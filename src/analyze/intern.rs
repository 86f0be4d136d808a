//! Shared copies of the strings that repeat across thousands of objects (namespaces, kinds,
//! API versions), so each object holds a pointer to one copy rather than its own. Pure.

use std::collections::HashSet;
use std::sync::Arc;

use super::resource_ref::ApiResource;

/// One `Arc<str>` per distinct string seen. Scoped to a page or a list, not global: what a
/// run has seen is freed with the snapshot, and a `--watch` over hours keeps nothing of the
/// namespaces that came and went.
#[derive(Debug, Default)]
pub struct Interner(HashSet<Arc<str>>);

impl Interner {
    /// The shared copy of `text`, made on first sight.
    pub fn get(&mut self, text: &str) -> Arc<str> {
        if let Some(kept) = self.0.get(text) {
            return kept.clone();
        }
        let kept: Arc<str> = Arc::from(text);
        self.0.insert(kept.clone());
        kept
    }

    /// How many distinct strings it holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What every object of one list shares (its API version and kind), and an [`Interner`] for
/// the strings that repeat among them (namespaces, owners' kinds and API versions).
#[derive(Debug)]
pub struct ListNames {
    pub api_version: Arc<str>,
    pub kind: Arc<str>,
    pub strings: Interner,
}

impl ListNames {
    /// The names a list of `r` shares.
    pub fn for_resource(r: &ApiResource) -> ListNames {
        ListNames {
            api_version: Arc::from(r.group_version()),
            kind: Arc::from(r.kind.as_str()),
            strings: Interner::default(),
        }
    }

    /// The shared copy of a namespace; None for an absent or empty one (cluster-scoped).
    pub fn namespace(&mut self, namespace: Option<&str>) -> Option<Arc<str>> {
        namespace.filter(|n| !n.is_empty()).map(|n| self.strings.get(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_strings_share_one_copy_and_different_ones_do_not() {
        let mut i = Interner::default();
        let (a, b, c) = (i.get("default"), i.get(&String::from("default")), i.get("kube-system"));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!((&*a, &*c, i.len()), ("default", "kube-system", 2));
    }
}
