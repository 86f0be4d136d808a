//! One piece of an audit log (a line, or one JSON value of a stream) read into
//! [`Request`]s: an audit.k8s.io Event (v1, and v1beta1 where the fields agree), a webhook
//! batch (an EventList), or a log shipper's wrapper that carries the event as a JSON string
//! (EKS's CloudWatch records and exports, Azure's diagnostic records) or as an object (an array
//! of records). The fast path reads an event straight into borrowed fields, skipping the
//! request and response bodies unless they are wanted; the rest only happens when that fails.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::body;
use crate::snapshot::audit::{Level, Micros, ObjectKey, Request, Verb, Writer};

/// Which events become requests: the rest are counted and dropped before anything is built.
#[derive(Debug, Clone, Default)]
pub struct Want {
    /// Keep reads and watches too.
    pub reads: bool,
    /// Keep dry runs too.
    pub dry_run: bool,
    /// Only this object (its group, resource, namespace and name); every object when None.
    pub object: Option<ObjectKey>,
    pub since: Option<Micros>,
    pub until: Option<Micros>,
    /// Read request and response bodies (field paths, holders, owners) where the level has them.
    pub bodies: bool,
}

/// What a piece of the log held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// This many audit events (kept or not).
    Events(usize),
    /// Valid JSON, but no audit event in it.
    NotAudit,
    /// Not JSON (or cut short).
    Invalid,
}

/// Counts over what was read, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub events: u64,
    /// Events of a stage other than the last (RequestReceived, ResponseStarted): one request
    /// logs several, and only its last stage has the answer.
    pub earlier_stages: u64,
    pub by_level: [u64; 3],
    pub kept: u64,
    /// The earliest and latest stageTimestamp of any event read.
    pub first: Option<Micros>,
    pub last: Option<Micros>,
}

impl Counts {
    pub fn add(&mut self, other: &Counts) {
        self.events += other.events;
        self.earlier_stages += other.earlier_stages;
        self.kept += other.kept;
        for (a, b) in self.by_level.iter_mut().zip(other.by_level) {
            *a += b;
        }
        self.first = self.first.into_iter().chain(other.first).min();
        self.last = self.last.into_iter().chain(other.last).max();
    }

    fn saw(&mut self, at: Micros) {
        self.first = Some(self.first.map_or(at, |f| f.min(at)));
        self.last = Some(self.last.map_or(at, |l| l.max(at)));
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw<'a> {
    #[serde(borrow, default, rename = "auditID")]
    audit_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    level: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    stage: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "requestURI")]
    request_uri: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    verb: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    user: Option<User<'a>>,
    #[serde(borrow, default)]
    impersonated_user: Option<User<'a>>,
    #[serde(borrow, default)]
    user_agent: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    object_ref: Option<ObjectRef<'a>>,
    #[serde(default)]
    response_status: Option<Status>,
    #[serde(borrow, default)]
    request_object: Option<&'a RawValue>,
    #[serde(borrow, default)]
    response_object: Option<&'a RawValue>,
    #[serde(borrow, default)]
    stage_timestamp: Option<Cow<'a, str>>,
    /// audit.k8s.io/v1beta1 and v1alpha1 events also carry `timestamp`.
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    /// A webhook batch (EventList).
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize, Default)]
struct User<'a> {
    #[serde(borrow, default)]
    username: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    extra: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ObjectRef<'a> {
    #[serde(borrow, default)]
    resource: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    api_group: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    resource_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    subresource: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct Status {
    #[serde(default)]
    code: Option<u16>,
}

#[derive(Deserialize, Default)]
struct Extra<'a> {
    #[serde(borrow, default, rename = "authentication.kubernetes.io/credential-id")]
    credential: Option<Vec<Cow<'a, str>>>,
}

/// Reads `text` (one line, or one JSON value), adding the wanted requests to `out`.
pub fn read(text: &[u8], want: &Want, out: &mut Vec<Request>, counts: &mut Counts) -> Read {
    read_nested(text, want, out, counts, 0)
}

fn read_nested(text: &[u8], want: &Want, out: &mut Vec<Request>, counts: &mut Counts, depth: u8) -> Read {
    let text = trim(text);
    if text.is_empty() {
        return Read::Events(0);
    }
    // A shipper's line may put a timestamp before the JSON (CloudWatch exports to S3).
    if !matches!(text[0], b'{' | b'[') {
        return match text.iter().position(|&b| b == b'{') {
            Some(at) if depth == 0 && at <= 64 => read_nested(&text[at..], want, out, counts, depth + 1),
            _ => Read::Invalid,
        };
    }
    match serde_json::from_slice::<Raw>(text) {
        Ok(raw) if is_event(&raw) => {
            event(raw, want, out, counts);
            Read::Events(1)
        }
        Ok(Raw { items: Some(items), .. }) => {
            let mut found = 0;
            for item in items {
                if let Read::Events(n) = read_nested(item.get().as_bytes(), want, out, counts, depth + 1) {
                    found += n;
                }
            }
            if found > 0 { Read::Events(found) } else { Read::NotAudit }
        }
        _ => match serde_json::from_slice::<Value>(text) {
            Ok(value) if depth < 3 => match cloud_audit(&value) {
                Some(event) => {
                    let text = serde_json::to_vec(&event).unwrap_or_default();
                    read_nested(&text, want, out, counts, depth + 1)
                }
                None => wrapped(&value, want, out, counts, depth),
            },
            Ok(_) => Read::NotAudit,
            Err(_) => Read::Invalid,
        },
    }
}

fn trim(text: &[u8]) -> &[u8] {
    let start = text.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(text.len());
    let end = text.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |e| e + 1);
    &text[start..end]
}

fn is_event(raw: &Raw) -> bool {
    raw.audit_id.is_some() && (raw.stage_timestamp.is_some() || raw.timestamp.is_some())
        || raw.kind.as_deref() == Some("Event") && raw.stage.is_some() && raw.stage_timestamp.is_some()
}

/// The audit events a wrapper carries: strings that hold an event's JSON (`message`, `log`,
/// `properties.log`), and events or EventLists as objects in arrays (`records`, `logEvents`).
fn wrapped(value: &Value, want: &Want, out: &mut Vec<Request>, counts: &mut Counts, depth: u8) -> Read {
    let mut found = 0;
    let mut visit = |v: &Value| -> usize {
        match v {
            Value::String(s) if s.starts_with('{') && s.contains("auditID") => {
                match read_nested(s.as_bytes(), want, out, counts, depth + 1) {
                    Read::Events(n) => n,
                    _ => 0,
                }
            }
            Value::Object(map) if map.contains_key("auditID") || map.contains_key("items") => {
                match serde_json::to_vec(v).map(|text| read_nested(&text, want, out, counts, depth + 1)) {
                    Ok(Read::Events(n)) => n,
                    _ => 0,
                }
            }
            _ => 0,
        }
    };
    walk(value, 0, &mut |v| found += visit(v));
    if found > 0 { Read::Events(found) } else { Read::NotAudit }
}

/// GKE's Cloud Audit Logs form of a Kubernetes request (a LogEntry whose protoPayload is an
/// AuditLog of serviceName k8s.io) as an audit.k8s.io/v1 Event, where the fields agree:
/// `resourceName` (group/version/[namespaces/NS/]resource/name[/subresource]) names the
/// object, the method's last part the verb, the principal the user, the gRPC status the code.
/// Taken from the shape public projects' fixtures show, not from a real export (docs/history.md).
fn cloud_audit(value: &Value) -> Option<Value> {
    let p = value.get("protoPayload")?;
    if p.get("serviceName")?.as_str()? != "k8s.io" {
        return None;
    }
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let method = text(p.get("methodName"));
    let verb = method.rsplit('.').next().unwrap_or_default().to_string();
    let name = text(p.get("resourceName"));
    let parts: Vec<&str> = name.split('/').collect();
    let (group, version, rest) = match parts.as_slice() {
        [group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (*ns, rest),
        rest => ("", rest),
    };
    let (resource, object, subresource) = match rest {
        [resource] => (*resource, "", ""),
        [resource, object] => (*resource, *object, ""),
        [resource, object, sub, ..] => (*resource, *object, *sub),
        [] => return None,
    };
    // gRPC codes as the HTTP codes the API server answered (google.rpc.Code).
    let code = match p.pointer("/status/code").and_then(Value::as_i64).unwrap_or(0) {
        0 => 200,
        3 | 11 => 400,
        5 => 404,
        6 | 10 => 409,
        7 => 403,
        8 => 429,
        16 => 401,
        9 => 422,
        14 => 503,
        4 => 504,
        _ => 500,
    };
    let level = match (p.get("request"), p.get("response")) {
        (_, Some(_)) => "RequestResponse",
        (Some(_), None) => "Request",
        _ => "Metadata",
    };
    let mut event = serde_json::json!({
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": level,
        "auditID": text(value.get("insertId")),
        "stage": "ResponseComplete",
        "requestURI": "",
        "verb": verb,
        "user": {"username": text(p.pointer("/authenticationInfo/principalEmail"))},
        "userAgent": text(p.pointer("/requestMetadata/callerSuppliedUserAgent")),
        "objectRef": {
            "resource": resource,
            "namespace": namespace,
            "name": object,
            "apiGroup": if group == "core" { "" } else { group },
            "apiVersion": version,
            "subresource": subresource,
        },
        "responseStatus": {"code": code},
        "stageTimestamp": text(value.get("timestamp")),
    });
    if let Some(request) = p.get("request") {
        event["requestObject"] = request.clone();
    }
    if let Some(response) = p.get("response") {
        event["responseObject"] = response.clone();
    }
    Some(event)
}

/// Every value under `value` (itself included) to `f`, not below an event (an object with an
/// auditID is handed over whole), at most six levels down.
fn walk(value: &Value, depth: u8, f: &mut impl FnMut(&Value)) {
    f(value);
    if depth >= 6 {
        return;
    }
    match value {
        Value::Object(map) if !map.contains_key("auditID") && !map.contains_key("items") || depth == 0 => {
            for v in map.values() {
                walk(v, depth + 1, f);
            }
        }
        Value::Array(items) => {
            for v in items {
                walk(v, depth + 1, f);
            }
        }
        _ => {}
    }
}

thread_local! {
    /// The words that repeat from write to write (groups, resources, namespaces, users,
    /// programs, managers), one copy per parser thread: a write cost an allocation for each.
    /// Emptied when it grows past a few thousand (a log naming many namespaces).
    static WORDS: std::cell::RefCell<hashbrown::HashSet<Arc<str>>> = std::cell::RefCell::default();
}

/// `text` as a shared string, the same allocation as the last time this thread saw it.
fn shared(text: &str) -> Arc<str> {
    WORDS.with_borrow_mut(|words| {
        if let Some(known) = words.get(text) {
            return known.clone();
        }
        if words.len() >= 4096 {
            words.clear();
        }
        let new: Arc<str> = text.into();
        words.insert(new.clone());
        new
    })
}

/// One event: counted, filtered, and kept as a request when wanted.
fn event(raw: Raw, want: &Want, out: &mut Vec<Request>, counts: &mut Counts) {
    counts.events += 1;
    let level = raw.level.as_deref().and_then(Level::parse).unwrap_or_default();
    counts.by_level[level as usize] += 1;
    let Some(at) = raw.stage_timestamp.as_deref().or(raw.timestamp.as_deref()).and_then(micros) else { return };
    counts.saw(at);
    if !matches!(raw.stage.as_deref(), None | Some("ResponseComplete") | Some("Panic")) {
        counts.earlier_stages += 1;
        return;
    }
    let verb = raw.verb.as_deref().map(Verb::parse);
    if !want.reads && !verb.is_some_and(Verb::writes) {
        return;
    }
    if want.since.is_some_and(|s| at < s) || want.until.is_some_and(|u| at > u) {
        return;
    }
    let object_ref = raw.object_ref.unwrap_or_default();
    let text = |c: &Option<Cow<str>>| c.as_deref().unwrap_or_default().to_string();
    if let Some(wanted) = &want.object {
        let same = |field: &Option<Cow<str>>, want: &str| field.as_deref().unwrap_or_default() == want;
        if !(same(&object_ref.name, &wanted.name)
            && same(&object_ref.resource, &wanted.resource)
            && same(&object_ref.api_group, &wanted.group)
            && same(&object_ref.namespace, &wanted.namespace))
        {
            return;
        }
    }
    let uri = raw.request_uri.as_deref().unwrap_or_default();
    let dry_run = query(uri, "dryRun").is_some_and(|v| !v.is_empty());
    if dry_run && !want.dry_run {
        return;
    }
    let manager = query(uri, "fieldManager").map(|m| m.into_owned());
    let user = raw.impersonated_user.as_ref().or(raw.user.as_ref());
    let program = program(raw.user_agent.as_deref().unwrap_or_default());
    let credential = user
        .and_then(|u| u.extra)
        .and_then(|extra| serde_json::from_str::<Extra>(extra.get()).ok())
        .and_then(|e| e.credential)
        .and_then(|ids| ids.first().map(|id| short_credential(id)));
    let subresource = text(&object_ref.subresource);
    let word = |c: &Option<Cow<str>>| shared(c.as_deref().unwrap_or_default());
    let object = ObjectKey {
        group: word(&object_ref.api_group),
        resource: word(&object_ref.resource),
        namespace: word(&object_ref.namespace),
        name: text(&object_ref.name).into(),
    };
    let mut request = Request {
        at,
        audit_id: raw.audit_id.as_deref().unwrap_or_default().into(),
        level,
        verb,
        subresource: shared(&subresource),
        uid: object_ref.uid.as_deref().filter(|u| !u.is_empty()).map(Into::into),
        credential,
        code: raw.response_status.and_then(|s| s.code).unwrap_or(0),
        held: object_ref.resource_version.as_deref().and_then(|v| v.parse().ok()),
        stored: None,
        dry_run,
        body: None,
        writer: Writer {
            user: shared(user.and_then(|u| u.username.as_deref()).unwrap_or_default()),
            program: shared(program),
            manager: manager.as_deref().map(shared),
        },
        object,
    };
    if want.bodies && level >= Level::Request {
        let verb = verb.unwrap_or(Verb::Other);
        let lease = request.object.is_lease();
        let mut body = raw
            .request_object
            .and_then(|r| body::request_body(r, verb, &subresource, manager.is_some(), lease))
            .unwrap_or_default();
        if let Some(response) = raw.response_object.filter(|_| request.ok()) {
            let apply = body.shape == crate::snapshot::audit::BodyShape::Apply;
            let named = manager.as_deref().unwrap_or(&request.writer.program);
            request.stored = body::response_body(response, named, &subresource, apply, &mut body);
        }
        request.body = Some(Box::new(body));
    }
    counts.kept += 1;
    out.push(request);
}

/// A query parameter of a request URI, percent-decoded.
fn query<'a>(uri: &'a str, key: &str) -> Option<Cow<'a, str>> {
    let (_, q) = uri.split_once('?')?;
    q.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == key).then(|| percent_encoding::percent_decode_str(v).decode_utf8_lossy())
    })
}

/// The product a user agent names first: `kube-controller-manager/v1.36.3 (linux/amd64) ...`.
pub fn program(user_agent: &str) -> &str {
    let end = user_agent.find(['/', ' ']).unwrap_or(user_agent.len());
    &user_agent[..end]
}

/// `JTI=3f2a1b2c-...` as `JTI=3f2a1b2c`: enough to tell two credentials apart, and a
/// credential id is no secret (it names the token, it is not the token).
fn short_credential(id: &str) -> Box<str> {
    match id.split_once('=') {
        Some((kind, value)) => format!("{kind}={}", value.chars().take(8).collect::<String>()).into(),
        None => id.chars().take(12).collect::<String>().into(),
    }
}

/// An RFC 3339 time as microseconds since the epoch: the log's own form
/// (`2026-12-07T15:04:05.123456Z`) read directly, any other offset or precision through jiff.
pub fn micros(text: &str) -> Option<Micros> {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        part.iter().try_fold(0i64, |n, &c| c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0')))
    };
    let fast = (|| {
        if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
            return None;
        }
        if *b.last()? != b'Z' {
            return None;
        }
        let (y, mo, d) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
        let (h, mi, s) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
        let mut frac = 0i64;
        let rest = &b[19..b.len() - 1];
        if !rest.is_empty() {
            if rest[0] != b'.' || rest.len() > 10 || rest.len() < 2 {
                return None;
            }
            let n = digits(20..19 + rest.len())?;
            let places = rest.len() as u32 - 1;
            frac = if places <= 6 { n * 10i64.pow(6 - places) } else { n / 10i64.pow(places - 6) };
        }
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
            return None;
        }
        let days = days_from_civil(y, mo, d);
        Some(((days * 86_400 + h * 3600 + mi * 60 + s) * 1_000_000) + frac)
    })();
    fast.or_else(|| text.parse::<jiff::Timestamp>().ok().map(|t| t.as_microsecond()))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    pub const UPDATE: &str = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"ResponseComplete","requestURI":"/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=gitops","verb":"update","user":{"username":"system:serviceaccount:argocd:argocd-application-controller","extra":{"authentication.kubernetes.io/credential-id":["JTI=3f2a1b2c-9d8e-4f00-8000-000000000000"]}},"sourceIPs":["10.0.0.1"],"userAgent":"argocd-application-controller/v2.9.0 (linux/amd64) kubernetes/abc","objectRef":{"resource":"deployments","namespace":"shop","name":"web","uid":"u-1","apiGroup":"apps","apiVersion":"v1","resourceVersion":"1234"},"responseStatus":{"metadata":{},"code":409},"requestReceivedTimestamp":"2026-12-07T15:04:05.100000Z","stageTimestamp":"2026-12-07T15:04:05.123456Z"}"#;

    fn all() -> Want {
        Want { reads: true, dry_run: true, bodies: true, ..Default::default() }
    }

    fn one(text: &str, want: &Want) -> (Read, Vec<Request>) {
        let mut out = Vec::new();
        let read = read(text.as_bytes(), want, &mut out, &mut Counts::default());
        (read, out)
    }

    #[test]
    fn an_update_that_lost_a_race() {
        let (read, out) = one(UPDATE, &Want::default());
        assert_eq!(read, Read::Events(1));
        let r = &out[0];
        assert_eq!(r.at, micros("2026-12-07T15:04:05.123456Z").unwrap());
        assert_eq!((r.verb, r.code, r.held), (Some(Verb::Update), 409, Some(1234)));
        assert_eq!(r.object.label(), "deployments.apps/web");
        assert_eq!(&*r.object.namespace, "shop");
        assert_eq!(r.writer.manager.as_deref(), Some("gitops"));
        assert_eq!(&*r.writer.program, "argocd-application-controller");
        assert_eq!(r.credential.as_deref(), Some("JTI=3f2a1b2c"));
        assert_eq!(&*r.audit_id, "a1");
    }

    #[test]
    fn filters_drop_what_is_not_wanted() {
        let read_only = UPDATE.replace(r#""verb":"update""#, r#""verb":"get""#);
        assert!(one(&read_only, &Want::default()).1.is_empty(), "reads are left out unless asked");
        assert_eq!(one(&read_only, &all()).1.len(), 1);
        let dry = UPDATE.replace("fieldManager=gitops", "fieldManager=gitops&dryRun=All");
        assert!(one(&dry, &Want::default()).1.is_empty());
        assert!(one(&dry, &all()).1[0].dry_run);
        let received = UPDATE.replace("ResponseComplete", "RequestReceived");
        let mut counts = Counts::default();
        read(received.as_bytes(), &all(), &mut Vec::new(), &mut counts);
        assert_eq!((counts.events, counts.earlier_stages, counts.kept), (1, 1, 0));
        let other = ObjectKey {
            group: "apps".into(),
            resource: "deployments".into(),
            namespace: "shop".into(),
            name: "api".into(),
        };
        assert!(one(UPDATE, &Want { object: Some(other), ..all() }).1.is_empty());
        let since = micros("2026-12-07T15:05:00Z");
        assert!(one(UPDATE, &Want { since, ..all() }).1.is_empty());
    }

    #[test]
    fn batches_wrappers_and_prefixes() {
        let list = format!(r#"{{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{UPDATE},{UPDATE}]}}"#);
        assert_eq!(one(&list, &Want::default()).0, Read::Events(2));
        let quoted = serde_json::to_string(UPDATE).unwrap();
        // EKS: CloudWatch Logs subscription records; Azure: diagnostic records.
        let cloudwatch = format!(
            r#"{{"messageType":"DATA_MESSAGE","logGroup":"/aws/eks/c/cluster","logEvents":[{{"id":"1","timestamp":1,"message":{quoted}}}]}}"#
        );
        assert_eq!(one(&cloudwatch, &Want::default()).0, Read::Events(1));
        let azure = format!(
            r#"{{"records":[{{"category":"kube-audit","properties":{{"log":{quoted},"pod":"kube-apiserver-1"}}}}]}}"#
        );
        assert_eq!(one(&azure, &Want::default()).0, Read::Events(1));
        let exported = format!("2026-12-07T15:04:05.123Z {UPDATE}");
        assert_eq!(one(&exported, &Want::default()).0, Read::Events(1));
        assert_eq!(one(r#"{"apiVersion":"apps/v1","kind":"Deployment"}"#, &all()).0, Read::NotAudit);
        assert_eq!(one(&UPDATE[..200], &all()).0, Read::Invalid);
        assert_eq!(one("not json at all", &all()).0, Read::Invalid);
    }

    #[test]
    fn gke_cloud_audit_entries_are_read_where_the_fields_agree() {
        let entry = r#"{"insertId":"abc123","timestamp":"2026-09-14T10:30:00.123456Z","resource":{"type":"k8s_cluster"},
            "protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","serviceName":"k8s.io",
            "methodName":"io.k8s.apps.v1.deployments.scale.update","resourceName":"apps/v1/namespaces/prod/deployments/checkout/scale",
            "authenticationInfo":{"principalEmail":"system:serviceaccount:kube-system:horizontal-pod-autoscaler"},
            "requestMetadata":{"callerSuppliedUserAgent":"kube-controller-manager/v1.32.0 (linux/amd64)"},
            "status":{"code":10},"request":{"spec":{"replicas":5}}}}"#;
        let (read, out) = one(entry, &all());
        assert_eq!(read, Read::Events(1));
        let r = &out[0];
        assert_eq!((r.verb, r.code, &*r.subresource, r.level), (Some(Verb::Update), 409, "scale", Level::Request));
        assert_eq!((r.object.label(), &*r.object.namespace), ("deployments.apps/checkout".to_string(), "prod"));
        assert_eq!(r.writer.account(), Some("horizontal-pod-autoscaler"));
        assert_eq!(r.body.as_ref().unwrap().fields[0].0.as_ref(), ".spec.replicas");
        let core =
            entry.replace("apps/v1/namespaces/prod/deployments/checkout/scale", "core/v1/namespaces/prod/pods/web-1");
        assert_eq!(one(&core, &all()).1[0].object.label(), "pods/web-1");
    }

    #[test]
    fn an_older_api_version_is_read_where_its_fields_agree() {
        let v1beta1 = UPDATE.replace("audit.k8s.io/v1", "audit.k8s.io/v1beta1").replace(
            r#""stageTimestamp":"2026-12-07T15:04:05.123456Z""#,
            r#""timestamp":"2026-12-07T15:04:05.123456Z""#,
        );
        let (_, out) = one(&v1beta1, &Want::default());
        assert_eq!(out[0].at, micros("2026-12-07T15:04:05.123456Z").unwrap());
    }

    #[test]
    fn times_read_fast_agree_with_jiff() {
        for t in [
            "2026-12-07T15:04:05Z",
            "2026-12-07T15:04:05.1Z",
            "2024-02-29T23:59:59.999999Z",
            "1999-01-01T00:00:00.000000001Z",
        ] {
            let fast = micros(t).unwrap();
            let slow = t.parse::<jiff::Timestamp>().unwrap().as_microsecond();
            assert_eq!(fast, slow, "{t}");
        }
        assert_eq!(micros("2026-12-07T16:04:05+01:00"), micros("2026-12-07T15:04:05Z"));
        assert_eq!(micros("yesterday"), None);
    }

    proptest! {
        /// Whatever bytes come in, reading never panics and keeps nothing that is not there.
        #[test]
        fn any_bytes_are_read_without_panic(text in proptest::collection::vec(any::<u8>(), 0..400)) {
            let mut out = Vec::new();
            let _ = read(&text, &all(), &mut out, &mut Counts::default());
        }

        /// Any cut of a real event is either the event (cut in trailing space) or skipped.
        #[test]
        fn a_cut_event_is_invalid_not_a_wrong_request(cut in 0usize..900) {
            let cut = cut.min(UPDATE.len());
            let (read, out) = one(&UPDATE[..cut], &all());
            if cut < UPDATE.len() {
                prop_assert!(out.is_empty());
                prop_assert!(matches!(read, Read::Invalid | Read::Events(0)), "{:?}", read);
            }
        }

        /// A real event with bytes changed, wrapped or batched: read or refused, never a
        /// panic, and a request read keeps the event's own time.
        #[test]
        fn changed_events_are_read_or_refused(
            edits in proptest::collection::vec((0usize..900, any::<u8>()), 1..6),
            wrap in 0u8..3,
        ) {
            let mut bytes = UPDATE.as_bytes().to_vec();
            for (at, b) in edits {
                let at = at % bytes.len();
                bytes[at] = b;
            }
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let text = match wrap {
                0 => text,
                1 => format!(r#"{{"kind":"EventList","items":[{text}]}}"#),
                _ => format!(r#"{{"records":[{{"properties":{{"log":{}}}}}]}}"#, serde_json::to_string(&text).unwrap()),
            };
            let mut out = Vec::new();
            let _ = read(text.as_bytes(), &all(), &mut out, &mut Counts::default());
            prop_assert!(out.len() <= 1);
        }

        #[test]
        fn fast_times_agree_with_jiff(secs in 0i64..4_000_000_000, frac in 0u32..1_000_000, digits in 0usize..7) {
            let t = jiff::Timestamp::new(secs, (frac * 1000) as i32).unwrap();
            let text = if digits == 0 { t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string() } else {
                format!("{}.{}Z", t.strftime("%Y-%m-%dT%H:%M:%S"), &format!("{frac:06}")[..digits])
            };
            prop_assert_eq!(micros(&text), Some(text.parse::<jiff::Timestamp>().unwrap().as_microsecond()));
        }
    }
}
