//! The plain records every source produces (the live API in src/connect, the audit log and
//! manifests in src/source) and the analyses in src/analyze read: no I/O here, and nothing
//! from the layers around it.

/// A served resource, what discovery found, and what could not be read.
mod resource;

/// The audit log's requests.
pub mod audit;
/// managedFields' FieldsV1: its paths, decoded as an object or a log's body is read.
pub mod fieldsv1;

pub use resource::{ApiResource, Discovered, Unavailable};

/// Something in scope that could not be read: the machine outputs' `skipped` entries
/// (one shape in every report), and, as text, the warnings on stderr.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    /// The resource as the command names it (plural, or plural.group).
    pub resource: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub reason: String,
}

impl Skipped {
    pub fn new(resource: impl Into<String>, namespace: Option<&str>, reason: impl Into<String>) -> Skipped {
        Skipped { resource: resource.into(), namespace: namespace.map(str::to_string), reason: reason.into() }
    }
}

/// "pods in team-a: forbidden", "leases: listing across all namespaces is forbidden; ...".
impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} in {ns}: {}", self.resource, self.reason),
            None => write!(f, "{}: {}", self.resource, self.reason),
        }
    }
}
