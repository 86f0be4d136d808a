//! What discovery reports: the resources a cluster serves, and the APIs that did not answer.

use super::Skipped;

/// One served resource, as discovery reports it (and as a dump keeps it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiResource {
    /// "" for the core group.
    pub group: String,
    pub version: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub short_names: Vec<String>,
    pub namespaced: bool,
    pub verbs: Vec<String>,
    /// Whether this version is the group's preferred one.
    pub preferred: bool,
}

impl ApiResource {
    /// A resource known without discovery (a built-in kind a command or a dump format
    /// names), listable.
    pub fn known(group: &str, version: &str, plural: &str, kind: &str, namespaced: bool) -> ApiResource {
        ApiResource {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            short_names: Vec::new(),
            namespaced,
            verbs: vec!["get".into(), "list".into(), "watch".into()],
            preferred: true,
        }
    }

    pub fn group_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// The collection path, in a namespace when given (and the resource is namespaced).
    pub fn collection(&self, namespace: Option<&str>) -> String {
        let root = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}", self.group_version())
        };
        match namespace {
            Some(ns) if self.namespaced => format!("{root}/namespaces/{ns}/{}", self.plural),
            _ => format!("{root}/{}", self.plural),
        }
    }

    /// plural.group as kubectl names it ("deployments.apps"; "pods" for the core group).
    pub fn qualified_name(&self) -> String {
        if self.group.is_empty() { self.plural.clone() } else { format!("{}.{}", self.plural, self.group) }
    }

    pub fn listable(&self) -> bool {
        self.verbs.iter().any(|v| v == "list")
    }
}

/// What discovery found: the resources served, and the APIs that did not answer.
#[derive(Debug, Default)]
pub struct Discovered {
    pub resources: Vec<ApiResource>,
    pub unavailable: Vec<Unavailable>,
}

/// A group/version that could not be read (its APIService is unavailable), with the
/// resources it last served, so that a command asked for one of them can say why it fails.
#[derive(Debug)]
pub struct Unavailable {
    pub group_version: String,
    pub resources: Vec<ApiResource>,
}

impl std::ops::Deref for Discovered {
    type Target = Vec<ApiResource>;
    fn deref(&self) -> &Vec<ApiResource> {
        &self.resources
    }
}

impl Discovered {
    /// The one-line warnings for stderr, one per API that did not answer (as kubectl warns).
    pub fn warnings(&self) -> Vec<String> {
        self.unavailable
            .iter()
            .map(|u| {
                format!("{} is unavailable (its API server does not answer); its types were not read", u.group_version)
            })
            .collect()
    }

    /// The APIs that did not answer, as what a command could not read.
    pub fn skipped(&self) -> Vec<Skipped> {
        self.unavailable
            .iter()
            .map(|u| Skipped::new(u.group_version.clone(), None, "unavailable (its API server does not answer)"))
            .collect()
    }
}
