//! What the API server's audit log says of each request, as src/source/audit reads it and
//! analyze/history reads it: plain records, in time order.

use std::sync::Arc;

use serde::Serialize;

/// Microseconds since the Unix epoch: the log's stageTimestamp, as compared and sorted.
pub type Micros = i64;

/// An audit policy level, as the event says it was logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema, Default)]
pub enum Level {
    #[default]
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    pub fn parse(text: &str) -> Option<Level> {
        match text {
            "Metadata" => Some(Level::Metadata),
            "Request" => Some(Level::Request),
            "RequestResponse" => Some(Level::RequestResponse),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// The object a request was about, as the event's objectRef names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ObjectKey {
    /// "" for the core group.
    pub group: Arc<str>,
    /// The plural resource: deployments, leases.
    pub resource: Arc<str>,
    /// "" for a cluster-scoped object.
    pub namespace: Arc<str>,
    pub name: Arc<str>,
}

impl ObjectKey {
    /// "deployments.apps/web", "pods/web-1": kubectl's TYPE/NAME with the plural resource.
    pub fn label(&self) -> String {
        if self.group.is_empty() {
            format!("{}/{}", self.resource, self.name)
        } else {
            format!("{}.{}/{}", self.resource, self.group, self.name)
        }
    }

    pub fn is(&self, group: &str, resource: &str) -> bool {
        &*self.group == group && &*self.resource == resource
    }

    /// Leases: their writes are renewals, read by the leadership analysis, not fights.
    pub fn is_lease(&self) -> bool {
        self.is("coordination.k8s.io", "leases")
    }

    /// Events record what happened; writing them is no coordination.
    pub fn is_event(&self) -> bool {
        self.is("", "events") || self.is("events.k8s.io", "events")
    }
}

/// Who wrote: the authenticated user, the program (from the user agent), the field manager
/// the request named (its `fieldManager` query parameter), and the credential it presented.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Writer {
    pub user: Arc<str>,
    /// The user agent's product: kube-controller-manager, kubectl, keda.
    pub program: Arc<str>,
    pub manager: Option<Arc<str>>,
}

impl Writer {
    /// The name a person knows it by: the field manager it asked for, else its program, and
    /// the service account (or user) it ran as when that says more.
    pub fn label(&self) -> String {
        let name = self.manager.as_deref().unwrap_or(&self.program);
        let name = if name.is_empty() { "(unknown)" } else { name };
        match self.account() {
            Some(account) if account != name => format!("{name} ({account})"),
            Some(_) => name.to_string(),
            None if self.user.is_empty() || *self.user == *name || self.user.strip_prefix("system:") == Some(name) => {
                name.to_string()
            }
            None => format!("{name} ({})", self.user),
        }
    }

    /// A service account's name (`deployment-controller`) when the user is one.
    pub fn account(&self) -> Option<&str> {
        self.user.strip_prefix("system:serviceaccount:").and_then(|rest| rest.split_once(':')).map(|(_, name)| name)
    }
}

/// What the request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    Create,
    Update,
    Patch,
    Delete,
    Deletecollection,
    Get,
    List,
    Watch,
    Other,
}

impl Verb {
    pub fn parse(text: &str) -> Verb {
        match text {
            "create" => Verb::Create,
            "update" => Verb::Update,
            "patch" => Verb::Patch,
            "delete" => Verb::Delete,
            "deletecollection" => Verb::Deletecollection,
            "get" => Verb::Get,
            "list" => Verb::List,
            "watch" => Verb::Watch,
            _ => Verb::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::Deletecollection => "deletecollection",
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Other => "other",
        }
    }

    pub fn writes(self) -> bool {
        matches!(self, Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::Deletecollection)
    }
}

/// One request, as the log's last stage for it says (ResponseComplete, or Panic).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Request {
    /// stageTimestamp: when the answer was written.
    pub at: Micros,
    pub audit_id: Box<str>,
    pub level: Level,
    pub verb: Option<Verb>,
    pub object: ObjectKey,
    /// "" for the main resource; status, scale, binding...
    pub subresource: Arc<str>,
    pub uid: Option<Box<str>>,
    pub writer: Writer,
    /// The credential the writer presented (a token's JTI, a certificate's hash), shortened:
    /// two instances of one program present two.
    pub credential: Option<Box<str>>,
    /// The answer's HTTP code; 0 when the log has none.
    pub code: u16,
    /// The resourceVersion the request carried (create and update bodies): the version the
    /// writer had read. On a 409 it is the stale one.
    pub held: Option<u64>,
    /// The resourceVersion of the object as stored (RequestResponse).
    pub stored: Option<u64>,
    pub dry_run: bool,
    /// What the body said, at Request level and above.
    pub body: Option<Box<Body>>,
}

impl Request {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.code)
    }

    pub fn conflict(&self) -> bool {
        self.code == 409
    }

    /// Writes through the main resource or /scale change what the object asks for; /status
    /// reports; other subresources (binding, eviction, approval) are actions.
    pub fn area(&self) -> Area {
        match &*self.subresource {
            "" | "scale" => Area::Spec,
            "status" => Area::Status,
            _ => Area::Other,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Area {
    Spec,
    Status,
    Other,
}

/// What a request's body and the stored object say, reduced to what the analyses read. No
/// value is kept: a field's value is a hash, to tell a change from a rewrite of the same value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Body {
    /// The field paths the body sets (`.spec.replicas`), each with a hash of its value. A list
    /// is one field (its items are not told apart); a patch's `$` directives are left out.
    pub fields: Vec<(Arc<str>, u64)>,
    /// How the body was meant: an object, a merge or strategic patch, a JSON patch, an apply
    /// configuration.
    pub shape: BodyShape,
    /// A Lease's holderIdentity and leaseDurationSeconds, as sent.
    pub holder: Option<Box<str>>,
    pub lease_seconds: Option<i32>,
    /// ownerReferences as sent, else as stored: (kind, name, uid).
    pub owners: Vec<(Arc<str>, Arc<str>, Box<str>)>,
    /// The writer's managedFields entry in the stored object (RequestResponse): the field
    /// paths it owns after this write.
    pub managed: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BodyShape {
    #[default]
    Object,
    Patch,
    JsonPatch,
    Apply,
}

/// "15:04:05.123" in UTC, with the date when `with_date`.
pub fn clock(at: Micros, with_date: bool) -> String {
    let Ok(t) = jiff::Timestamp::from_microsecond(at) else { return "?".into() };
    if with_date { t.strftime("%Y-%m-%d %H:%M:%S%.3f").to_string() } else { t.strftime("%H:%M:%S%.3f").to_string() }
}

/// The timestamp of `at`, for machine output.
pub fn timestamp(at: Micros) -> jiff::Timestamp {
    jiff::Timestamp::from_microsecond(at).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// A UUID's 128 bits, read without an allocation (hyphens anywhere, either case); None for
/// text that is not 32 hex digits. Audit IDs and uids are UUIDs; comparing them as numbers
/// spares a string each.
pub fn uuid_bits(text: &str) -> Option<u128> {
    let mut n: u128 = 0;
    let mut digits = 0;
    for b in text.bytes() {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            b'-' => continue,
            _ => return None,
        };
        if digits == 32 {
            return None;
        }
        n = (n << 4) | u128::from(d);
        digits += 1;
    }
    (digits == 32).then_some(n)
}

/// An audit ID or uid as 128 bits: a UUID's own ([`uuid_bits`]), any other text's hash (two
/// 64-bit hashes; none the API server assigns).
pub fn id_number(text: &str) -> u128 {
    if let Some(n) = uuid_bits(text) {
        return n;
    }
    use std::hash::{Hash, Hasher};
    let mut a = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut a);
    let mut b = std::collections::hash_map::DefaultHasher::new();
    (text, 1u8).hash(&mut b);
    (u128::from(a.finish()) << 64) | u128::from(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(user: &str, program: &str, manager: Option<&str>) -> Writer {
        Writer { user: user.into(), program: program.into(), manager: manager.map(Into::into) }
    }

    #[test]
    fn writers_are_named_as_people_know_them() {
        let hpa =
            writer("system:serviceaccount:kube-system:horizontal-pod-autoscaler", "kube-controller-manager", None);
        assert_eq!(hpa.label(), "kube-controller-manager (horizontal-pod-autoscaler)");
        assert_eq!(writer("admin", "kubectl", Some("gitops")).label(), "gitops (admin)");
        assert_eq!(writer("", "kubectl", None).label(), "kubectl");
        assert_eq!(writer("system:kube-scheduler", "kube-scheduler", None).label(), "kube-scheduler");
        assert_eq!(writer("alice", "kubectl", None).label(), "kubectl (alice)");
        let keda = writer("system:serviceaccount:keda:keda-operator", "keda", Some("keda-operator"));
        assert_eq!(keda.label(), "keda-operator");
    }

    #[test]
    fn uuids_are_read_as_numbers() {
        assert_eq!(uuid_bits("00000000-0000-0000-0000-0000000000ff"), Some(255));
        assert_eq!(uuid_bits("0A000000000000000000000000000000"), Some(0x0a << 120));
        for odd in ["", "d-1", "00000000-0000-0000-0000-0000000000ff0", "00000000-0000-0000-0000-0000000000f"] {
            assert_eq!(uuid_bits(odd), None, "{odd}");
        }
    }

    #[test]
    fn areas_put_scale_with_spec() {
        let mut r = Request { subresource: "scale".into(), ..Default::default() };
        assert_eq!(r.area(), Area::Spec);
        r.subresource = "status".into();
        assert_eq!(r.area(), Area::Status);
        r.subresource = "binding".into();
        assert_eq!(r.area(), Area::Other);
    }
}
