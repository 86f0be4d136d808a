//! What the formats of other tools' dumps have in common (src/source/cluster_info.rs,
//! src/source/support_bundle.rs): Lists of whole objects, read a List at a time, and what
//! their items say of the dump as a whole, for the trailer a coord dump would carry.

use jiff::Timestamp;
use serde::Deserialize;
use serde_json::value::RawValue;

/// A List as `kubectl get -o json` and client-go write it.
#[derive(Deserialize)]
pub(super) struct List {
    #[serde(default)]
    pub kind: String,
    /// null in an empty List.
    #[serde(default)]
    pub items: Option<Vec<Box<RawValue>>>,
}

/// What the items read so far say: the latest time any carries (the capture time when the
/// format has none), whether any kept its managedFields, the pods with no node (by uid).
#[derive(Default)]
pub(super) struct Notes {
    pub latest: Option<Timestamp>,
    pub managed_fields: bool,
    pub unscheduled: Vec<String>,
}

impl Notes {
    pub fn note(&mut self, kind: &str, item: &RawValue) {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Item {
            #[serde(default)]
            metadata: Meta,
            #[serde(default)]
            spec: Option<Spec>,
            #[serde(default)]
            last_timestamp: Option<Timestamp>,
        }
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Meta {
            #[serde(default)]
            uid: String,
            creation_timestamp: Option<Timestamp>,
            #[serde(default)]
            managed_fields: Option<Vec<serde::de::IgnoredAny>>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Spec {
            #[serde(default)]
            node_name: Option<String>,
        }
        let Ok(item) = serde_json::from_str::<Item>(item.get()) else { return };
        for t in [item.metadata.creation_timestamp, item.last_timestamp].into_iter().flatten() {
            self.latest = Some(self.latest.map_or(t, |l| l.max(t)));
        }
        self.managed_fields |= item.metadata.managed_fields.is_some_and(|m| !m.is_empty());
        if kind == "Pod" && item.spec.is_some_and(|s| s.node_name.unwrap_or_default().is_empty()) {
            self.unscheduled.push(item.metadata.uid);
        }
    }
}
