//! The HTTP client under every request. kube's own client builder speaks HTTP/1.1 only
//! (each concurrent list opens its own TLS connection); this one offers h2 and http/1.1
//! by ALPN, so where the API server offers HTTP/2 concurrent requests share one
//! connection as they do in client-go. Compression is asked for and undone by the caller
//! ([`super::request`], [`super::gzip`]). It goes through the proxy kubectl would use ([`super::proxy`]): HTTP CONNECT over
//! http or https, or SOCKS5. TLS, auth and headers come from kube's Config as before.
//! `KUBECTL_COORD_HTTP1=1` turns HTTP/2 off (the benchmark compares both).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use http::HeaderValue;
use http_body::{Body, Frame};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::{SocksV5, Tunnel};
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use tower::ServiceBuilder;

use super::proxy::Proxy;

/// What a response cost on the wire: the protocol and the body's bytes as they arrived
/// (compressed, when the server compressed them). Put in each response's extensions.
#[derive(Debug, Clone)]
pub struct Wire {
    pub protocol: http::Version,
    pub bytes: Arc<AtomicU64>,
}

impl Wire {
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn protocol_name(&self) -> &'static str {
        match self.protocol {
            http::Version::HTTP_2 => "HTTP/2",
            http::Version::HTTP_10 => "HTTP/1.0",
            _ => "HTTP/1.1",
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const STREAM_WINDOW: u32 = 4 << 20;
const CONNECTION_WINDOW: u32 = 32 << 20;

pub fn client(config: &kube::Config, proxy: Option<&Proxy>) -> Result<kube::Client, String> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(config.connect_timeout);
    let Some(proxy) = proxy else { return finish(config, http) };
    let url = proxy.url.clone();
    match url.scheme_str() {
        Some("socks5") => finish(config, SocksV5::new(url, http)),
        Some("http") => finish(config, with_auth(Tunnel::new(url.clone(), http), &url)),
        Some("https") => {
            // TLS to the proxy itself (http/1.1: CONNECT is an HTTP/1.1 request).
            let to_proxy = https(config, http, false)?;
            finish(config, with_auth(Tunnel::new(url.clone(), to_proxy), &url))
        }
        other => Err(format!("proxy scheme {other:?} is not supported")),
    }
}

fn https<C>(config: &kube::Config, connector: C, h2: bool) -> Result<hyper_rustls::HttpsConnector<C>, String> {
    let tls = config.rustls_client_config().map_err(|e| format!("TLS setup: {e}"))?;
    let builder = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http();
    let builder = match &config.tls_server_name {
        Some(name) => builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(
            name.clone().try_into().map_err(|e| format!("invalid tls-server-name {name:?}: {e}"))?,
        )),
        None => builder,
    };
    Ok(if h2 && !http1_only() {
        builder.enable_http1().enable_http2().wrap_connector(connector)
    } else {
        builder.enable_http1().wrap_connector(connector)
    })
}

fn http1_only() -> bool {
    std::env::var_os("KUBECTL_COORD_HTTP1").is_some_and(|v| !v.is_empty() && v != "0")
}

fn finish<C>(config: &kube::Config, connector: C) -> Result<kube::Client, String>
where
    C: tower::Service<http::Uri> + Clone + Send + Sync + 'static,
    C::Response:
        hyper::rt::Read + hyper::rt::Write + hyper_util::client::legacy::connect::Connection + Send + Unpin + 'static,
    C::Future: Send + 'static,
    C::Error: Into<BoxError>,
{
    let mut connector = hyper_timeout::TimeoutConnector::new(https(config, connector, true)?);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    // HTTP/2's default 64 KiB windows let one stream carry 64 KiB per round trip: 1.6 MB/s
    // at 40 ms, far below the link for a large list. Go's transport (client-go) opens 4 MiB
    // per stream; with 8 lists at once, 32 MiB for the connection.
    let hyper: hyper_util::client::legacy::Client<_, kube::client::Body> =
        hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .http2_initial_stream_window_size(STREAM_WINDOW)
            .http2_initial_connection_window_size(CONNECTION_WINDOW)
            .build(connector);
    let auth = config.auth_layer().map_err(|e| format!("auth: {e}"))?;
    let headers = config.extra_headers_layer().map_err(|e| format!("headers: {e}"))?;
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(auth)
        .layer(headers)
        // Innermost: sees the body as it came off the connection.
        .map_response(count)
        .map_err(BoxError::from)
        .service(hyper);
    Ok(kube::Client::new(service, config.default_namespace.clone()))
}

fn count<B>(response: http::Response<B>) -> http::Response<Counted<B>> {
    let wire = Wire { protocol: response.version(), bytes: Arc::default() };
    let bytes = wire.bytes.clone();
    let (mut parts, body) = response.into_parts();
    parts.extensions.insert(wire);
    http::Response::from_parts(parts, Counted { inner: body, bytes })
}

/// A response body that adds up the bytes of its data frames.
pub struct Counted<B> {
    inner: B,
    bytes: Arc<AtomicU64>,
}

impl<B: Body + Unpin> Body for Counted<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            use bytes::Buf;
            self.bytes.fetch_add(data.remaining() as u64, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Basic auth for a proxy URL with user:password@, as kubectl sends it.
fn with_auth<C>(tunnel: Tunnel<C>, url: &http::Uri) -> Tunnel<C> {
    let Some((userinfo, _)) = url.authority().and_then(|a| a.as_str().split_once('@')) else { return tunnel };
    match HeaderValue::from_str(&format!("Basic {}", basic_credentials(userinfo))) {
        Ok(header) => tunnel.with_auth(header),
        Err(_) => tunnel,
    }
}

/// The Basic credentials of a URL's `user:password` part, percent-decoded first (a password
/// holding `@` is written `%40` in the URL).
fn basic_credentials(userinfo: &str) -> String {
    use base64::Engine;
    let decoded: Vec<u8> = percent_encoding::percent_decode_str(userinfo).collect();
    base64::engine::general_purpose::STANDARD.encode(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_credentials_are_encoded_as_kubectl_sends_them() {
        assert_eq!(basic_credentials("user:pass"), "dXNlcjpwYXNz");
        assert_eq!(basic_credentials("user:p%40ss"), "dXNlcjpwQHNz", "user:p@ss");
        // A % not followed by two hex digits is kept as it is.
        assert_eq!(basic_credentials("u:%zz"), "dToleno=", "u:%zz");
    }
}
