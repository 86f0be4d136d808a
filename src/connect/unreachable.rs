//! Why a request never reached the API server, as one plain sentence.
//!
//! The error that comes back is a chain of layers (kube's service, hyper-util's connector, its
//! proxy tunnel, the socket, rustls), each prefixing its own words: "ServiceError: client error
//! (Connect): tunnel error: failed to create underlying connection: tcp connect error:
//! Connection refused (os error 111)". A user needs the stage that failed and the root cause:
//! "cannot connect to the proxy: connection refused". hyper-util keeps its error kinds
//! private, so its stages are told by the words its Display writes.

use std::error::Error;
use std::io;

/// The sentence for a request that failed before any answer.
pub fn sentence(err: &(dyn Error + 'static)) -> String {
    let mut layers: Vec<String> = Vec::new();
    let mut io_error: Option<&io::Error> = None;
    let mut tls_error: Option<&rustls::Error> = None;
    let mut next = Some(err);
    while let Some(e) = next {
        layers.push(e.to_string().replace('\n', " "));
        if let Some(mut found) = e.downcast_ref::<io::Error>() {
            // An io::Error's source() skips the error it wraps, which may be another io::Error
            // (hyper-util wraps tokio-rustls's): look inside, down to rustls's own.
            loop {
                io_error = Some(found);
                let inner = found.get_ref();
                if let Some(tls) = inner.and_then(|i| i.downcast_ref::<rustls::Error>()) {
                    tls_error = Some(tls);
                }
                match inner.and_then(|i| i.downcast_ref::<io::Error>()) {
                    Some(deeper) => found = deeper,
                    None => break,
                }
            }
        }
        if let Some(found) = e.downcast_ref::<rustls::Error>() {
            tls_error = Some(found);
        }
        next = e.source();
    }
    let root = match (tls_error, io_error) {
        (Some(tls), _) => format!("the TLS handshake failed: {tls}"),
        (None, Some(e)) => io_phrase(e),
        (None, None) => layers.last().map(|t| without_os_code(t)).unwrap_or_default(),
    };
    let has = |words: &str| layers.iter().any(|l| l.contains(words));
    let proxy_stage = layers.iter().find_map(|l| l.strip_prefix("tunnel error: ").or(l.strip_prefix("SOCKS error: ")));
    match proxy_stage {
        Some("failed to create underlying connection") => format!("cannot connect to the proxy: {root}"),
        Some("unsuccessful") => "the proxy refused to open a tunnel to the API server".into(),
        Some("proxy authorization required") => {
            "the proxy asks for credentials the request did not carry or it refused (407)".into()
        }
        Some("unexpected end of file") => "the proxy closed the connection while opening the tunnel".into(),
        Some(stage) if stage != root => format!("the proxy failed ({stage}): {root}"),
        Some(_) => format!("the proxy failed: {root}"),
        None if has("dns error") => format!("cannot resolve the server's host name: {root}"),
        None => root,
    }
}

fn io_phrase(e: &io::Error) -> String {
    use io::ErrorKind::*;
    match e.kind() {
        ConnectionRefused => "connection refused".into(),
        ConnectionReset | ConnectionAborted => "the connection was reset".into(),
        TimedOut => "the connection timed out".into(),
        UnexpectedEof => "the connection was closed before the answer".into(),
        // rustls reports a failed handshake (an unknown certificate authority, a name the
        // certificate does not cover) as invalid data on the socket.
        InvalidData => format!("the TLS handshake failed: {}", without_os_code(&e.to_string())),
        _ => without_os_code(&e.to_string()),
    }
}

/// "Connection refused (os error 111)" -> "connection refused".
fn without_os_code(text: &str) -> String {
    let text = match text.rfind(" (os error ") {
        Some(i) if text.ends_with(')') => &text[..i],
        _ => text,
    };
    // Lower case to continue the sentence, unless the text starts with an acronym ("TLS ...").
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(first), second) if !second.is_some_and(char::is_uppercase) => {
            first.to_lowercase().chain(text.chars().skip(1)).collect()
        }
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;

    /// A layer with its own words over a source, as hyper-util and kube write them.
    #[derive(Debug)]
    struct Layer(&'static str, Box<dyn Error + Send + Sync>);
    impl fmt::Display for Layer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }
    impl Error for Layer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(self.1.as_ref())
        }
    }
    #[derive(Debug)]
    struct Leaf(&'static str);
    impl fmt::Display for Leaf {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }
    impl Error for Leaf {}

    fn chain(words: &[&'static str], root: Box<dyn Error + Send + Sync>) -> Box<dyn Error + Send + Sync> {
        words.iter().rev().fold(root, |inner, w| Box::new(Layer(w, inner)))
    }

    fn refused() -> Box<dyn Error + Send + Sync> {
        Box::new(io::Error::from(io::ErrorKind::ConnectionRefused))
    }

    #[test]
    fn the_stage_and_the_root_cause_in_plain_words() {
        let direct = chain(&["ServiceError", "client error (Connect)", "tcp connect error"], refused());
        assert_eq!(sentence(direct.as_ref()), "connection refused");
        let dead_proxy = chain(
            &["ServiceError", "client error (Connect)", "tunnel error: failed to create underlying connection"],
            chain(&["tcp connect error"], refused()),
        );
        assert_eq!(sentence(dead_proxy.as_ref()), "cannot connect to the proxy: connection refused");
        let refusing = chain(&["client error (Connect)", "tunnel error: unsuccessful"], Box::new(Leaf("x")));
        assert_eq!(sentence(refusing.as_ref()), "the proxy refused to open a tunnel to the API server");
        let unknown = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let tls = chain(&["ServiceError", "client error (Connect)"], Box::new(unknown));
        assert_eq!(sentence(tls.as_ref()), "the TLS handshake failed: invalid peer certificate: UnknownIssuer");
        let unknown = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let wrapped = io::Error::new(io::ErrorKind::InvalidData, unknown);
        let tls_in_io = chain(&["client error (Connect)"], Box::new(io::Error::other(wrapped)));
        assert_eq!(sentence(tls_in_io.as_ref()), "the TLS handshake failed: invalid peer certificate: UnknownIssuer");
        let corrupt = chain(
            &["ServiceError", "client error (Connect)"],
            Box::new(io::Error::new(io::ErrorKind::InvalidData, "received corrupt message")),
        );
        assert_eq!(sentence(corrupt.as_ref()), "the TLS handshake failed: received corrupt message");
        let dns = chain(
            &["client error (Connect)", "dns error"],
            Box::new(io::Error::other("failed to lookup address information: Name or service not known")),
        );
        assert_eq!(
            sentence(dns.as_ref()),
            "cannot resolve the server's host name: failed to lookup address information: Name or service not known"
        );
        let socks = chain(&["client error (Connect)", "SOCKS error: io error during SOCKS handshake"], refused());
        assert_eq!(sentence(socks.as_ref()), "the proxy failed (io error during SOCKS handshake): connection refused");
    }

    #[test]
    fn os_codes_go_and_acronyms_stay() {
        assert_eq!(without_os_code("Connection refused (os error 111)"), "connection refused");
        assert_eq!(without_os_code("TLS alert"), "TLS alert");
        assert_eq!(without_os_code(""), "");
    }
}
