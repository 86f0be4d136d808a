//! The only way the plugin talks to the API server.
//!
//! Every request is built here, so the read-only promise is checked in one place:
//! [`Conn::get`] issues GET, [`Conn::ask`] issues POST only to the review
//! resources that answer a question and persist nothing, and [`Conn::dry_run_apply`] issues
//! PATCH only with `dryRun=All`, which the server answers and persists nothing of. A per-request timeout
//! (from --request-timeout) bounds every call, including a black-holed server.

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use http::{Method, Request, StatusCode, header};
use jiff::Timestamp;

use super::kubeconfig::Target;
use super::pace::Gate;
use super::retry::{self, Attempts, Cause};
use super::transport::Wire;

/// Media types the plugin asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accept {
    Json,
    /// `PartialObjectMetadataList`: metadata only (labels, ownerReferences, managedFields).
    MetadataList,
    /// [`Accept::MetadataList`] as JSON only: for a caller that keeps each item as its text
    /// (the dump), which a protobuf answer would have to be turned back into.
    MetadataListJson,
    /// `PartialObjectMetadata` for a single object.
    Metadata,
    /// Aggregated discovery (`APIGroupDiscoveryList`, apidiscovery.k8s.io/v2).
    AggregatedDiscovery,
    /// A `Table` (server-side printing): with `includeObject=None`, each object's printed
    /// cells only, its name first. No plain JSON to fall back on: a Secret's would hold its data.
    Table,
}

impl Accept {
    pub fn header_value(self) -> &'static str {
        match self {
            Accept::Json => "application/json",
            Accept::MetadataList if protobuf_lists() => {
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,\
                 application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            }
            Accept::MetadataList | Accept::MetadataListJson => {
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            }
            Accept::Metadata => "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
            Accept::AggregatedDiscovery => {
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
            }
            Accept::Table => "application/json;as=Table;g=meta.k8s.io;v=v1",
        }
    }
}

/// Whether metadata lists ask for protobuf first (src/connect/protobuf.rs): yes, unless
/// KUBECTL_COORD_PROTOBUF=0 (to compare with JSON, or to work around a server that sends
/// protobuf it cannot encode right).
fn protobuf_lists() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("KUBECTL_COORD_PROTOBUF").map_or(true, |v| v != "0"))
}

/// Core resources whose contents are never read, whatever a command asks for: their
/// metadata (labels, ownerReferences, managedFields) is all the plugin needs.
pub const METADATA_ONLY_RESOURCES: &[&str] = &["secrets", "configmaps"];

/// The media type actually sent for `path`: a full-object request to a Secret or
/// ConfigMap (or their collections, or a watch on them) becomes metadata-only.
pub fn effective_accept(path: &str, wanted: Accept, watch: bool) -> Accept {
    if wanted != Accept::Json {
        return wanted;
    }
    let Some(rest) = path.split('?').next().and_then(|p| p.strip_prefix("/api/v1/")) else {
        return wanted;
    };
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let (resource, after) = match segments.as_slice() {
        ["namespaces", _, resource, after @ ..] => (*resource, after.len()),
        [resource, after @ ..] => (*resource, after.len()),
        [] => return wanted,
    };
    if !METADATA_ONLY_RESOURCES.contains(&resource) {
        return wanted;
    }
    // Watch events carry single objects; a list without a name is a collection.
    if watch || after > 0 { Accept::Metadata } else { Accept::MetadataList }
}

/// Review resources a POST may create: they answer a question and persist nothing.
pub const REVIEW_PATHS: &[&str] = &[
    "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
    "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
];

#[derive(Debug)]
pub struct Reply {
    /// As collected, not copied into a Vec: a page of whole objects is megabytes.
    pub body: bytes::Bytes,
    /// The body is Kubernetes protobuf (a metadata list), not JSON.
    pub protobuf: bool,
    /// The API server's clock, from the `Date` header.
    pub server_time: Option<Timestamp>,
}

/// What went wrong with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The server answered with an error status and, when it sent a `Status`, its reason
    /// (Forbidden, NotFound, Expired...).
    Status { code: u16, reason: String },
    /// No answer: refused, TLS, DNS, a proxy, a connection lost. `closed` marks a request
    /// lost, unsent, to an HTTP/2 connection the server closed gracefully (GOAWAY NO_ERROR, as
    /// the API server does after answering 401 on it): safe to send again.
    Unreachable { closed: bool },
    /// No answer within --request-timeout.
    Timeout,
    /// An answer whose body could not be read as what was asked for.
    Undecodable,
}

/// A failed request, with the method, path and server every error names.
#[derive(Debug, Clone)]
pub struct RequestError {
    pub method: Method,
    pub path: String,
    pub server: String,
    pub failure: Failure,
    pub message: String,
    /// The server's Retry-After, when it sent one (429, some 503s).
    pub retry_after: Option<Duration>,
    /// A refused server-side apply's conflicts: (field, "conflict with \"manager\" ...").
    pub conflicts: Vec<(String, String)>,
}

impl RequestError {
    /// The HTTP status, when the server answered with an error.
    pub fn code(&self) -> Option<u16> {
        match self.failure {
            Failure::Status { code, .. } => Some(code),
            _ => None,
        }
    }
    pub fn is(&self, code: StatusCode) -> bool {
        self.code() == Some(code.as_u16())
    }
    /// Whether the server was reached at all (an error status or an unreadable answer).
    pub fn answered(&self) -> bool {
        matches!(self.failure, Failure::Status { .. } | Failure::Undecodable)
    }
    /// 403: this identity may not do this (other kinds or namespaces may still be readable).
    /// A 401 is not this: the credentials themselves are refused, so nothing is readable
    /// and a command that treated it as partial access would answer with an empty all-clear.
    pub fn forbidden(&self) -> bool {
        self.is(StatusCode::FORBIDDEN)
    }
    pub fn unauthorized(&self) -> bool {
        self.is(StatusCode::UNAUTHORIZED)
    }
    pub fn not_found(&self) -> bool {
        self.is(StatusCode::NOT_FOUND)
    }
    /// 406 Not Acceptable: the server cannot answer in the representation asked for (a Table
    /// from a server or proxy that does not print the type).
    pub fn not_acceptable(&self) -> bool {
        self.is(StatusCode::NOT_ACCEPTABLE)
    }
    /// 410 Gone: a list's continue token (or a watch's resourceVersion) expired.
    pub fn expired(&self) -> bool {
        self.is(StatusCode::GONE)
    }
    /// "403 Forbidden", "unreachable", "timeout", "undecodable": why, in a few words.
    /// Why a list was skipped, for the report: "forbidden", "404 NotFound", or for a server
    /// failure its message too (a conversion webhook that is down says so there).
    pub fn skip_reason(&self) -> String {
        match &self.failure {
            _ if self.forbidden() => "forbidden".into(),
            Failure::Status { code, .. } if *code >= 500 && !self.message.trim().is_empty() => {
                format!("{}: {}", self.short(), self.message.split_whitespace().collect::<Vec<_>>().join(" "))
            }
            _ => self.short(),
        }
    }

    /// Why, without the request: the status and the server's message, or what the transport met.
    pub fn why(&self) -> String {
        match &self.failure {
            Failure::Status { .. } if !self.message.is_empty() => format!("{}: {}", self.short(), self.message),
            Failure::Status { .. } => self.short(),
            _ => self.message.clone(),
        }
    }

    pub fn short(&self) -> String {
        match &self.failure {
            Failure::Status { code, reason } => format!("{code} {reason}").trim().to_string(),
            Failure::Unreachable { .. } => "unreachable".into(),
            Failure::Timeout => "timeout".into(),
            Failure::Undecodable => "undecodable".into(),
        }
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            Failure::Status { code, reason } => {
                write!(f, "{} {}{}: {code}", self.method, self.server, self.path)?;
                if !reason.is_empty() {
                    write!(f, " {reason}")?;
                }
                if !self.message.is_empty() {
                    write!(f, ": {}", self.message)?;
                }
                Ok(())
            }
            Failure::Unreachable { .. } => {
                write!(
                    f,
                    "cannot reach the API server at {} ({} {}): {}",
                    self.server, self.method, self.path, self.message
                )
            }
            Failure::Timeout => write!(f, "{} {}{}: {}", self.method, self.server, self.path, self.message),
            Failure::Undecodable => {
                write!(
                    f,
                    "{} {}{}: the answer could not be read: {}",
                    self.method, self.server, self.path, self.message
                )
            }
        }
    }
}

impl std::error::Error for RequestError {}

#[derive(Clone)]
pub struct Conn {
    client: kube::Client,
    server: String,
    timeout: Option<Duration>,
    /// The proxy's URL (its password redacted), named in every error that did not reach the server.
    proxy: Option<String>,
    /// Ask for gzip, as kubectl does, unless the kubeconfig says `disable-compression: true`.
    gzip: bool,
    /// The first request the server left unanswered (a timeout, a lost connection), shared by
    /// every clone: once one request cannot be answered, the others have nothing to add, so
    /// they fail at once with it rather than each waiting out its own --request-timeout.
    /// A watch that waits for the server to come back clears it ([`Conn::retry_server`]).
    lost: Arc<Mutex<Option<RequestError>>>,
    /// Since when watches on this connection have been waiting for the server to come back:
    /// several watches (trace) share one outage, said once when it starts and once when it ends.
    outage: Arc<Mutex<Option<Instant>>>,
    /// How many requests are in flight at once, shared by every clone ([`super::pace`]).
    /// Watches stay out of it: they are open for as long as the run.
    gate: Arc<Gate>,
}

/// Requests the server throttled (429) at least once, and those still throttled when their
/// retry budget ran out: said once at the end of the run ([`throttle_summary`]).
static THROTTLED: AtomicUsize = AtomicUsize::new(0);
static THROTTLED_FINALLY: AtomicUsize = AtomicUsize::new(0);

/// "31 requests throttled by the API server (429), all retried": why a run was slow, or
/// why it is incomplete. None when nothing was throttled.
pub fn throttle_summary() -> Option<String> {
    let throttled = THROTTLED.load(Ordering::Relaxed);
    let refused = THROTTLED_FINALLY.load(Ordering::Relaxed);
    let requests = |n: usize| if n == 1 { "1 request".to_string() } else { format!("{n} requests") };
    match (throttled, refused) {
        (0, _) => None,
        (n, 0) => Some(format!("{} throttled by the API server (429), all retried", requests(n))),
        (n, r) => Some(format!(
            "{} throttled by the API server (429); {} still throttled after {} retries or {}s of waiting, \
             and what it would have read is reported as skipped",
            requests(n),
            if r == 1 { "1 was".to_string() } else { format!("{r} were") },
            retry::THROTTLE_RETRIES,
            retry::THROTTLE_BUDGET.as_secs()
        )),
    }
}

impl Conn {
    pub fn new(target: &Target) -> anyhow::Result<Conn> {
        let client = super::transport::client(&target.config, target.proxy.as_ref())
            .map_err(|e| crate::error::usage(format!("cannot set up a client for {}: {e}", target.server)))?;
        Ok(Conn {
            client,
            server: target.server.trim_end_matches('/').to_string(),
            timeout: target.request_timeout,
            proxy: target
                .proxy
                .as_ref()
                .map(|p| super::proxy::redacted(&p.url.to_string()).trim_end_matches('/').into()),
            gzip: !target.config.disable_compression,
            lost: Arc::default(),
            outage: Arc::default(),
            gate: Arc::default(),
        })
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    /// GET a path (with query), returning the body and the server's clock.
    pub async fn get(&self, path: &str, accept: Accept) -> Result<Reply, RequestError> {
        let mut request = Request::builder()
            .method(Method::GET)
            .uri(path)
            .header(header::ACCEPT, effective_accept(path, accept, false).header_value());
        // The API server compresses a large answer (over 128 KiB) when asked. Watches are
        // not asked: their events must arrive as they happen.
        if self.gzip {
            request = request.header(header::ACCEPT_ENCODING, "gzip");
        }
        self.send(request.body(Vec::new()).expect("a GET with a valid path always builds")).await
    }

    /// POST a review object (SelfSubjectReview, SelfSubjectAccessReview): a question, not a write.
    pub async fn ask(&self, path: &str, body: &serde_json::Value) -> Result<Reply, RequestError> {
        assert!(REVIEW_PATHS.contains(&path), "kubectl-coord only creates review objects, not {path}");
        let request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(header::ACCEPT, Accept::Json.header_value())
            .header(header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(body).expect("JSON values serialize"))
            .expect("a POST with a valid path always builds");
        self.send(request).await
    }

    /// A server-side apply of `body` to the object at `path` as `field_manager`, as a dry run
    /// (`dryRun=All`, added here and nowhere else: nothing is persisted) and not forced: the
    /// server answers 409 with the fields other managers own that it would take.
    pub async fn dry_run_apply(&self, path: &str, field_manager: &str, body: Vec<u8>) -> Result<Reply, RequestError> {
        assert!(!path.contains('?'), "a dry-run apply path carries no query of its own: {path}");
        let manager: String =
            percent_encoding::utf8_percent_encode(field_manager, percent_encoding::NON_ALPHANUMERIC).collect();
        let request = Request::builder()
            .method(Method::PATCH)
            .uri(format!("{path}?dryRun=All&force=false&fieldManager={manager}"))
            .header(header::ACCEPT, Accept::Json.header_value())
            .header(header::CONTENT_TYPE, "application/apply-patch+yaml")
            .body(body)
            .expect("a PATCH with a valid path always builds");
        self.send(request).await
    }

    /// Opens a watch (GET with `watch=1` in `path`). Only the wait for the response
    /// headers is bounded by --request-timeout; the stream itself stays open.
    pub async fn watch(&self, path: &str) -> Result<WatchStream, RequestError> {
        self.watch_as(path, Accept::Json).await
    }

    /// [`Conn::watch`] asking for `accept`: Json, or Metadata for PartialObjectMetadata events.
    pub async fn watch_as(&self, path: &str, accept: Accept) -> Result<WatchStream, RequestError> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(path)
            .header(header::ACCEPT, effective_accept(path, accept, true).header_value())
            .body(Vec::new())
            .expect("a GET with a valid path always builds");
        self.check_lost()?;
        let line = Self::trace_line(&request);
        let started = Self::trace_clock();
        let response = self.bounded(&Method::GET, path, self.respond(request)).await.inspect_err(|e| self.note(e))?;
        Self::trace(line, response.extensions().get::<Wire>(), None, started, Some(response.status().as_u16()));
        Ok(WatchStream { body: response.into_body(), buffer: Vec::new() })
    }

    /// Fails at once when an earlier request found the server silent or gone.
    fn check_lost(&self) -> Result<(), RequestError> {
        match self.lost.lock().map(|l| l.clone()) {
            Ok(Some(e)) => Err(e),
            _ => Ok(()),
        }
    }

    /// Remembers a request the server left unanswered (the first one only).
    fn note(&self, e: &RequestError) {
        if matches!(e.failure, Failure::Timeout | Failure::Unreachable { closed: false })
            && let Ok(mut lost) = self.lost.lock()
        {
            lost.get_or_insert_with(|| e.clone());
        }
    }

    /// A watch found the server gone: true for the first to find it, which says so.
    pub fn outage_begins(&self) -> bool {
        self.outage.lock().is_ok_and(|mut since| {
            let first = since.is_none();
            since.get_or_insert_with(Instant::now);
            first
        })
    }

    /// A watch reached the server again: how long it was gone, for the first to reach it.
    pub fn outage_ends(&self) -> Option<Duration> {
        self.outage.lock().ok()?.take().map(|since| since.elapsed())
    }

    /// For a watch waiting out a server restart: ask the server again, rather than fail
    /// with what an earlier request met.
    pub fn retry_server(&self) {
        if let Ok(mut lost) = self.lost.lock() {
            *lost = None;
        }
    }

    /// The start of a trace line: method, Accept and path (what the benchmark replays).
    fn trace_line(request: &Request<Vec<u8>>) -> String {
        let accept = request.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or_default();
        format!("{}\t{accept}\t{}", request.method(), request.uri())
    }

    /// Milliseconds since this process's first request: when a traced request started and ended.
    fn trace_clock() -> f64 {
        static START: OnceLock<std::time::Instant> = OnceLock::new();
        START.get_or_init(std::time::Instant::now).elapsed().as_secs_f64() * 1000.0
    }

    /// Appends a request to the file KUBECTL_COORD_TRACE names, if any: one line of method,
    /// Accept, path, then the protocol, the body's bytes on the wire (compressed when the
    /// server compressed it) and decoded (none for a watch, whose body streams on), and
    /// when it started and ended (ms after the first request; the benchmarks' critical path),
    /// and the HTTP status (`-` when none came: the benchmarks count the 429s).
    fn trace(line: String, wire: Option<&Wire>, decoded: Option<usize>, started: f64, status: Option<u16>) {
        static TRACE: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();
        let file = TRACE.get_or_init(|| {
            let path = std::env::var_os("KUBECTL_COORD_TRACE")?;
            std::fs::OpenOptions::new().create(true).append(true).open(path).ok().map(Mutex::new)
        });
        if let Some(file) = file
            && let Ok(mut f) = file.lock()
        {
            let protocol = wire.map(Wire::protocol_name).unwrap_or("-");
            let bytes = match (wire, decoded) {
                (Some(w), Some(d)) => format!("{}\t{d}", w.bytes()),
                _ => "-\t-".into(),
            };
            let status = status.map_or("-".to_string(), |s| s.to_string());
            let _ = writeln!(f, "{line}\t{protocol}\t{bytes}\t{started:.1}\t{:.1}\t{status}", Self::trace_clock());
        }
    }

    /// A whole request, headers and body, each attempt within --request-timeout; a throttled
    /// (429) or failing (5xx) server is asked again as [`retry`] decides.
    async fn send(&self, request: Request<Vec<u8>>) -> Result<Reply, RequestError> {
        let (method, path) = (request.method().clone(), request.uri().to_string());
        self.check_lost()?;
        let started = Instant::now();
        let mut so_far = Attempts::default();
        let mut throttled = false;
        loop {
            // Room first, then the attempt: --request-timeout bounds the attempt, not the wait.
            let pass = self.gate.enter().await;
            // A request that waited for room while another went unanswered fails with it, as
            // one sent after it does: a silent server costs one --request-timeout, not one per
            // wave of requests (eight at a time before the first answer shows the protocol).
            self.check_lost()?;
            let e = match self.bounded(&method, &path, self.send_once(copy(&request), &method, &path)).await {
                Ok((reply, http1)) => {
                    pass.answered(Some(http1));
                    return Ok(reply);
                }
                Err(e) => e,
            };
            // An unanswered request keeps its room until it is noted below: the requests
            // waiting for that room must find it lost when they get in.
            let mut unanswered = None;
            match e.code() {
                Some(429 | 503) => pass.overloaded(),
                // An error status does not say which protocol carried it.
                Some(_) => pass.answered(None),
                None => unanswered = Some(pass),
            }
            let cause = retry::cause(e.code(), e.failure == (Failure::Unreachable { closed: true }));
            if cause == Cause::Throttled && !throttled {
                throttled = true;
                THROTTLED.fetch_add(1, Ordering::Relaxed);
            }
            so_far.elapsed = started.elapsed();
            match retry::next_wait(cause, e.retry_after, so_far, self.timeout, fastrand::f64()) {
                Some(wait) => {
                    drop(unanswered);
                    tokio::time::sleep(wait).await;
                    so_far.retries += 1;
                    so_far.waited += wait;
                }
                None => {
                    if cause == Cause::Throttled {
                        THROTTLED_FINALLY.fetch_add(1, Ordering::Relaxed);
                    }
                    self.note(&e);
                    drop(unanswered);
                    return Err(e);
                }
            }
        }
    }

    /// One attempt: the reply, and whether it came over HTTP/1.1.
    async fn send_once(
        &self,
        request: Request<Vec<u8>>,
        method: &Method,
        path: &str,
    ) -> Result<(Reply, bool), RequestError> {
        let line = Self::trace_line(&request);
        let started = Self::trace_clock();
        let response = match self.respond(request).await {
            Ok(r) => r,
            Err(e) => {
                // Failed requests are traced too (protocol and bytes unknown).
                Self::trace(line, None, None, started, e.code());
                return Err(e);
            }
        };
        let wire = response.extensions().get::<Wire>().cloned();
        let status = response.status().as_u16();
        let server_time = response
            .headers()
            .get(header::DATE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| jiff::fmt::rfc2822::DateTimeParser::new().parse_timestamp(v).ok());
        let protobuf = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with(super::protobuf::MEDIA_TYPE));
        let gzipped = is_gzip(&response);
        let body = response.into_body().collect_bytes().await.map_err(|e| {
            self.error(
                method,
                path,
                Failure::Unreachable { closed: false },
                format!("reading the response: {}", flat(&e)),
            )
        })?;
        let body = if gzipped {
            super::gzip::inflate(&body).map(bytes::Bytes::from).map_err(|e| {
                self.error(method, path, Failure::Undecodable, format!("inflating the gzip response: {e}"))
            })?
        } else {
            body
        };
        Self::trace(line, wire.as_ref(), Some(body.len()), started, Some(status));
        let http1 = wire.is_some_and(|w| w.protocol != http::Version::HTTP_2);
        Ok((Reply { body, protobuf, server_time }, http1))
    }

    /// Sends a request and returns a successful response; every failure (transport,
    /// an error status kube recognised, any other non-2xx answer) becomes a RequestError.
    async fn respond(&self, request: Request<Vec<u8>>) -> Result<http::Response<kube::client::Body>, RequestError> {
        let (method, path) = (request.method().clone(), request.uri().to_string());
        let response = match self.client.send(request.map(kube::client::Body::from)).await {
            Ok(r) => r,
            Err(kube::Error::Api(status)) => {
                let failure = Failure::Status { code: status.code, reason: status.reason.clone() };
                return Err(self.error(&method, &path, failure, status.message.clone()));
            }
            Err(e) => {
                let message = match &self.proxy {
                    Some(proxy) => format!("through proxy {proxy}: {}", super::unreachable::sentence(&e)),
                    None => super::unreachable::sentence(&e),
                };
                let failure = Failure::Unreachable { closed: closed_gracefully(&e) };
                return Err(self.error(&method, &path, failure, message));
            }
        };
        if !response.status().is_success() {
            let code = response.status().as_u16();
            let gzipped = is_gzip(&response);
            let retry_after = response_retry_after(response.headers());
            let body = response.into_body().collect_bytes().await.map(|b| b.to_vec()).unwrap_or_default();
            let body = if gzipped { super::gzip::inflate(&body).unwrap_or_default() } else { body };
            let (reason, message) = status_text(&body);
            return Err(RequestError {
                retry_after,
                conflicts: if code == 409 { apply_conflicts(&body) } else { Vec::new() },
                ..self.error(&method, &path, Failure::Status { code, reason }, message)
            });
        }
        Ok(response)
    }

    /// Bounds `call` by --request-timeout, when one is set.
    async fn bounded<T>(
        &self,
        method: &Method,
        path: &str,
        call: impl std::future::Future<Output = Result<T, RequestError>>,
    ) -> Result<T, RequestError> {
        match self.timeout {
            None => call.await,
            Some(limit) => tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
                Err(self.error(method, path, Failure::Timeout, format!("no answer within --request-timeout {limit:?}")))
            }),
        }
    }

    fn error(&self, method: &Method, path: &str, failure: Failure, message: String) -> RequestError {
        RequestError {
            method: method.clone(),
            path: path.to_string(),
            server: self.server.clone(),
            failure,
            message,
            retry_after: None,
            conflicts: Vec::new(),
        }
    }
}

/// Whether a request was lost to a connection the server closed on purpose, so sending it
/// again is safe. The API server ends an HTTP/2 connection with GOAWAY NO_ERROR after a 401;
/// requests started beside the refused one then fail in ways that all mean "not sent": the
/// GOAWAY itself on their stream; hyper's pool handing a request that waited for the new
/// connection one already closed; hyper-util cancelling a request (still queued for the
/// connection, or whose own connection attempt gave way to the one that negotiated HTTP/2).
/// hyper-util sends such requests again only on a reused connection or when HTTP/2 is
/// forced, not on the fresh ALPN connection every command starts with.
fn closed_gracefully(err: &(dyn std::error::Error + 'static)) -> bool {
    use hyper_util::client::legacy::{self, pool};
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(h2) = e.downcast_ref::<h2::Error>() {
            return h2.is_go_away() && h2.reason() == Some(h2::Reason::NO_ERROR);
        }
        if let Some(pool) = e.downcast_ref::<pool::Error>() {
            return matches!(pool, pool::Error::CheckedOutClosedValue);
        }
        // hyper-util keeps its error kinds private; its Display names the kind.
        if e.downcast_ref::<legacy::Error>().is_some_and(|e| e.to_string() == "client error (Canceled)")
            || e.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_canceled)
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// Requests are not Clone; a retry needs the same method, URI, headers and body again.
fn copy(r: &Request<Vec<u8>>) -> Request<Vec<u8>> {
    let mut builder = Request::builder().method(r.method().clone()).uri(r.uri().clone());
    for (name, value) in r.headers() {
        builder = builder.header(name, value);
    }
    builder.body(r.body().clone()).expect("a copy of a valid request builds")
}

/// The newline-delimited JSON events of a watch response.
pub struct WatchStream {
    body: kube::client::Body,
    buffer: Vec<u8>,
}

impl WatchStream {
    /// The next event line; `Ok(None)` when the server closed the watch.
    pub async fn next_line(&mut self) -> Result<Option<Vec<u8>>, String> {
        use http_body_util::BodyExt;
        loop {
            if let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Ok(Some(line));
            }
            match self.body.frame().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(flat(&e)),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buffer.extend_from_slice(&data);
                    }
                }
            }
        }
    }
}

fn response_retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    headers.get(header::RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(retry::parse_retry_after)
}

fn is_gzip<B>(response: &http::Response<B>) -> bool {
    response.headers().get(header::CONTENT_ENCODING).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"))
}

/// Reason and message of a `Status` body (JSON, or protobuf when a metadata list was
/// refused), or the raw text when it is not one.
/// The conflicts a 409 answer to a server-side apply lists in its Status's causes.
fn apply_conflicts(body: &[u8]) -> Vec<(String, String)> {
    #[derive(serde::Deserialize)]
    struct Status {
        #[serde(default)]
        details: Option<Details>,
    }
    #[derive(serde::Deserialize)]
    struct Details {
        #[serde(default)]
        causes: Vec<StatusCause>,
    }
    #[derive(serde::Deserialize)]
    struct StatusCause {
        #[serde(default)]
        reason: String,
        #[serde(default)]
        message: String,
        #[serde(default)]
        field: String,
    }
    let Ok(Status { details: Some(details) }) = serde_json::from_slice::<Status>(body) else { return Vec::new() };
    details.causes.into_iter().filter(|c| c.reason == "FieldManagerConflict").map(|c| (c.field, c.message)).collect()
}

fn status_text(body: &[u8]) -> (String, String) {
    if let Some(status) = super::protobuf::status(body) {
        return status;
    }
    #[derive(serde::Deserialize)]
    struct Status {
        #[serde(default)]
        reason: String,
        #[serde(default)]
        message: String,
    }
    match serde_json::from_slice::<Status>(body) {
        Ok(s) => (s.reason, s.message),
        Err(_) => (String::new(), String::from_utf8_lossy(body).chars().take(200).collect::<String>().trim().into()),
    }
}

/// An error and its sources on one line, without repeats.
pub fn flat(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = String::new();
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = next {
        let text = e.to_string().replace('\n', " ");
        if !text.is_empty() && !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        next = e.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_bodies_and_plain_bodies() {
        let body = br#"{"kind":"Status","reason":"Forbidden","message":"leases is forbidden"}"#;
        assert_eq!(status_text(body), ("Forbidden".into(), "leases is forbidden".into()));
        assert_eq!(status_text(b"  upstream gone \n"), (String::new(), "upstream gone".into()));
    }

    #[test]
    fn metadata_accept_headers_ask_for_partial_object_metadata() {
        assert!(Accept::MetadataList.header_value().contains("as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"));
        assert!(Accept::Metadata.header_value().contains("as=PartialObjectMetadata;g=meta.k8s.io;v=v1"));
    }

    #[test]
    fn secrets_and_configmaps_are_only_ever_read_metadata_only() {
        use Accept::*;
        for (path, watch, want) in [
            ("/api/v1/secrets", false, MetadataList),
            ("/api/v1/namespaces/a/secrets?limit=500&continue=x", false, MetadataList),
            ("/api/v1/namespaces/a/secrets/db-password", false, Metadata),
            ("/api/v1/namespaces/a/configmaps/settings", false, Metadata),
            ("/api/v1/configmaps?limit=500", false, MetadataList),
            ("/api/v1/namespaces/a/configmaps?watch=1&fieldSelector=metadata.name%3Dx", true, Metadata),
            // Not Secrets or ConfigMaps: what the caller asked for.
            ("/api/v1/namespaces/secrets/pods", false, Json),
            ("/api/v1/namespaces/configmaps", false, Json),
            ("/apis/example.com/v1/namespaces/a/secrets", false, Json),
            ("/api/v1/namespaces/a/pods/secrets", false, Json),
        ] {
            assert_eq!(effective_accept(path, Json, watch), want, "{path}");
        }
        // A metadata request stays one.
        assert_eq!(effective_accept("/api/v1/namespaces/a/secrets", MetadataList, false), MetadataList);
    }

    #[test]
    fn a_retried_request_is_the_same_request() {
        let r = Request::builder()
            .method(Method::POST)
            .uri("/apis/authentication.k8s.io/v1/selfsubjectreviews")
            .header(header::ACCEPT, "application/json")
            .body(b"{}".to_vec())
            .unwrap();
        let c = copy(&r);
        assert_eq!((c.method(), c.uri(), c.headers(), c.body()), (r.method(), r.uri(), r.headers(), r.body()));
    }

    #[derive(Debug)]
    struct Wrapped(Box<dyn std::error::Error + Send + Sync>);
    impl fmt::Display for Wrapped {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("client error (Connect)")
        }
    }
    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(self.0.as_ref())
        }
    }

    #[test]
    fn only_requests_lost_unsent_are_sent_again() {
        use hyper_util::client::legacy::pool;
        let checked_out_closed = Wrapped(Box::new(pool::Error::CheckedOutClosedValue));
        assert!(closed_gracefully(&checked_out_closed));
        let go_away = Wrapped(Box::new(h2::Error::from(h2::Reason::NO_ERROR)));
        // A reset stream with NO_ERROR is not a GOAWAY: the request may have been processed.
        assert!(!closed_gracefully(&go_away));
        assert!(!closed_gracefully(&Wrapped(Box::new(pool::Error::PoolDisabled))));
        assert!(!closed_gracefully(&Wrapped(Box::new(std::io::Error::other("connection refused")))));
    }

    #[test]
    fn error_display_names_the_server() {
        let e = RequestError {
            method: Method::GET,
            path: "/version".into(),
            server: "https://127.0.0.1:1".into(),
            failure: Failure::Unreachable { closed: false },
            message: "connection refused".into(),
            retry_after: None,
            conflicts: Vec::new(),
        };
        assert_eq!(
            e.to_string(),
            "cannot reach the API server at https://127.0.0.1:1 (GET /version): connection refused"
        );
        assert_eq!(e.short(), "unreachable");
        assert!(!e.answered());
        let forbidden = RequestError {
            failure: Failure::Status { code: 403, reason: "Forbidden".into() },
            message: "pods is forbidden".into(),
            ..e.clone()
        };
        assert_eq!(forbidden.to_string(), "GET https://127.0.0.1:1/version: 403 Forbidden: pods is forbidden");
        assert!(forbidden.forbidden() && forbidden.answered());
        assert_eq!(forbidden.short(), "403 Forbidden");
        assert_eq!(forbidden.skip_reason(), "forbidden");
        let webhook = RequestError {
            failure: Failure::Status { code: 500, reason: String::new() },
            message: "conversion webhook for x/v1, Kind=W failed:\n connection refused".into(),
            ..e.clone()
        };
        assert_eq!(webhook.skip_reason(), "500: conversion webhook for x/v1, Kind=W failed: connection refused");
        let gone = RequestError { failure: Failure::Status { code: 404, reason: "NotFound".into() }, ..webhook };
        assert_eq!(gone.skip_reason(), "404 NotFound");
        let timeout =
            RequestError { failure: Failure::Timeout, message: "no answer within --request-timeout 2s".into(), ..e };
        assert_eq!(timeout.to_string(), "GET https://127.0.0.1:1/version: no answer within --request-timeout 2s");
    }
}
