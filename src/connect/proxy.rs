//! Which proxy a request to the API server goes through, as kubectl decides it: the
//! kubeconfig cluster's `proxy-url` when set (used for every request, NO_PROXY or not);
//! otherwise Go's `http.ProxyFromEnvironment` (golang.org/x/net/http/httpproxy):
//! HTTPS_PROXY for https servers, HTTP_PROXY for http ones (upper case first), never for
//! `localhost` or a loopback IP, and not for hosts NO_PROXY names. Pure: the environment
//! comes in as a lookup function.

use std::net::IpAddr;

/// Where the proxy setting came from, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Kubeconfig,
    Env(&'static str),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    pub url: http::Uri,
    pub source: Source,
}

/// The proxy for `server` (the cluster URL), or None to connect directly. An unparsable
/// proxy URL is an error naming where it came from.
pub fn choose(
    server: &http::Uri,
    kubeconfig_proxy: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Proxy>, String> {
    if let Some(url) = kubeconfig_proxy.filter(|u| !u.is_empty()) {
        return parse(url, "the kubeconfig's proxy-url").map(|url| Some(Proxy { url, source: Source::Kubeconfig }));
    }
    let get = |names: &[&'static str]| names.iter().find_map(|&n| env(n).filter(|v| !v.is_empty()).map(|v| (n, v)));
    let https = server.scheme_str() == Some("https");
    let Some((name, value)) =
        (if https { get(&["HTTPS_PROXY", "https_proxy"]) } else { get(&["HTTP_PROXY", "http_proxy"]) })
    else {
        return Ok(None);
    };
    let host = server.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    let port = server.port_u16().unwrap_or(if https { 443 } else { 80 });
    if !use_proxy(&host, port, get(&["NO_PROXY", "no_proxy"]).map(|(_, v)| v).as_deref()) {
        return Ok(None);
    }
    // Go takes a proxy value without a scheme as http://.
    let value = if value.contains("://") { value } else { format!("http://{value}") };
    parse(&value, name).map(|url| Some(Proxy { url, source: Source::Env(name) }))
}

/// A URL as it may be printed: a password in it becomes `xxxxx`, the user name stays, as
/// Go's `url.URL.Redacted` (and so kubectl) prints it. Also for text that does not parse as a
/// URL, which error messages quote too.
pub fn redacted(url: &str) -> String {
    let start = url.find("://").map_or(0, |i| i + 3);
    let end = url[start..].find(['/', '?', '#']).map_or(url.len(), |i| start + i);
    let Some(at) = url[start..end].rfind('@').map(|i| start + i) else { return url.to_string() };
    match url[start..at].find(':') {
        Some(colon) => format!("{}:xxxxx{}", &url[..start + colon], &url[at..]),
        None => url.to_string(),
    }
}

fn parse(url: &str, source: &str) -> Result<http::Uri, String> {
    let shown = redacted(url);
    let uri: http::Uri = url.parse().map_err(|e| format!("invalid proxy URL {shown:?} in {source}: {e}"))?;
    match uri.scheme_str() {
        Some("http" | "https" | "socks5") if uri.host().is_some() => Ok(uri),
        Some("http" | "https" | "socks5") => Err(format!("invalid proxy URL {shown:?} in {source}: no host")),
        other => Err(format!(
            "proxy URL {shown:?} in {source}: scheme {:?} is not supported (http, https, socks5)",
            other.unwrap_or("")
        )),
    }
}

/// httpproxy's useProxy: false for localhost, loopback IPs, and hosts NO_PROXY names.
fn use_proxy(host: &str, port: u16, no_proxy: Option<&str>) -> bool {
    if host == "localhost" {
        return false;
    }
    let ip: Option<IpAddr> = host.parse().ok();
    if ip.is_some_and(|ip| ip.is_loopback()) {
        return false;
    }
    let Some(no_proxy) = no_proxy else { return true };
    for entry in no_proxy.split(',').map(|e| e.trim().to_ascii_lowercase()).filter(|e| !e.is_empty()) {
        if entry == "*" {
            return false;
        }
        if let Some((net, bits)) = entry.split_once('/') {
            if let (Some(ip), Ok(net), Ok(bits)) = (ip, net.parse::<IpAddr>(), bits.parse::<u8>())
                && in_cidr(ip, net, bits)
            {
                return false;
            }
            continue;
        }
        let (entry_host, entry_port) = split_port(&entry);
        if entry_port.is_some_and(|p| p != port) {
            continue;
        }
        if let Ok(entry_ip) = entry_host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            if ip == Some(entry_ip) {
                return false;
            }
            continue;
        }
        // "foo.com" matches foo.com and any subdomain; ".foo.com" and "*.foo.com" only subdomains.
        let bare = entry_host.strip_prefix('*').unwrap_or(entry_host);
        let (suffix, match_host) = match bare.strip_prefix('.') {
            Some(_) => (bare.to_string(), false),
            None => (format!(".{bare}"), true),
        };
        if host.ends_with(&suffix) || (match_host && host == &suffix[1..]) {
            return false;
        }
    }
    true
}

fn split_port(entry: &str) -> (&str, Option<u16>) {
    // An IPv6 address without brackets has colons of its own.
    if entry.matches(':').count() > 1 && !entry.starts_with('[') {
        return (entry, None);
    }
    match entry.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => (h, p.parse().ok()),
        _ => (entry, None),
    }
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    fn via(server: &str, pairs: &[(&str, &str)]) -> Option<String> {
        choose(&server.parse().unwrap(), None, env(pairs)).unwrap().map(|p| p.url.to_string())
    }

    #[test]
    fn kubectl_rules_for_the_environment() {
        let proxy = [("HTTPS_PROXY", "http://proxy:3128")];
        assert_eq!(via("https://api.example.com:6443", &proxy).as_deref(), Some("http://proxy:3128/"));
        // HTTPS_PROXY is for https servers; HTTP_PROXY for http ones.
        assert_eq!(via("http://api.example.com", &proxy), None);
        assert_eq!(
            via("http://api.example.com", &[("http_proxy", "proxy:8080")]).as_deref(),
            Some("http://proxy:8080/")
        );
        // Upper case wins over lower case.
        let both = [("HTTPS_PROXY", "http://upper:1"), ("https_proxy", "http://lower:1")];
        assert_eq!(via("https://api.example.com", &both).as_deref(), Some("http://upper:1/"));
        // Never for localhost or loopback addresses, whatever NO_PROXY says.
        assert_eq!(via("https://localhost:6443", &proxy), None);
        assert_eq!(via("https://127.0.0.5:6443", &proxy), None);
        assert_eq!(via("https://[::1]:6443", &proxy), None);
    }

    #[test]
    fn no_proxy_as_go_reads_it() {
        let with = |no: &str, server: &str| via(server, &[("HTTPS_PROXY", "http://p:1"), ("NO_PROXY", no)]).is_some();
        assert!(!with("*", "https://api.example.com"));
        assert!(!with("example.com", "https://api.example.com"), "a domain covers its subdomains");
        assert!(!with("example.com", "https://example.com"), "and itself");
        assert!(!with(".example.com", "https://api.example.com"));
        assert!(with(".example.com", "https://example.com"), "a leading dot: subdomains only");
        assert!(!with("*.example.com", "https://api.example.com"));
        assert!(with("ample.com", "https://api.example.com"), "whole labels only");
        assert!(!with("10.0.0.0/8", "https://10.1.2.3:6443"));
        assert!(with("10.0.0.0/8", "https://11.1.2.3:6443"));
        assert!(!with("10.1.2.3", "https://10.1.2.3:6443"));
        assert!(!with("api.example.com:6443", "https://api.example.com:6443"));
        assert!(with("api.example.com:443", "https://api.example.com:6443"), "a port must match");
        assert!(!with("other.org, API.example.com", "https://api.example.com"), "lists, spaces and case");
        assert!(!with("2001:db8::/32", "https://[2001:db8::1]:6443"));
    }

    #[test]
    fn passwords_are_redacted_as_go_redacts_them() {
        assert_eq!(redacted("http://user:s3cret@127.0.0.1:3128/"), "http://user:xxxxx@127.0.0.1:3128/");
        assert_eq!(redacted("socks5://u:p@h:1"), "socks5://u:xxxxx@h:1");
        // A user name alone is not a secret; no userinfo, nothing to do.
        assert_eq!(redacted("http://user@h:1"), "http://user@h:1");
        assert_eq!(redacted("http://h:1/a@b"), "http://h:1/a@b");
        // An @ in the password, and text without a scheme.
        assert_eq!(redacted("http://u:p@ss@h:1"), "http://u:xxxxx@h:1");
        assert_eq!(redacted("u:pw@h:1"), "u:xxxxx@h:1");
        let server: http::Uri = "https://api.example.com".parse().unwrap();
        for bad in ["ftp://u:s3cret@h:21", "http://u:s3cret@[bad", "http://u:s3cret@"] {
            let err = choose(&server, Some(bad), env(&[])).unwrap_err();
            assert!(!err.contains("s3cret") && err.contains("u:xxxxx@"), "{err}");
        }
    }

    #[test]
    fn the_kubeconfig_proxy_url_wins_and_is_checked() {
        let server: http::Uri = "https://127.0.0.1:6443".parse().unwrap();
        let p = choose(&server, Some("socks5://127.0.0.1:1080"), env(&[("HTTPS_PROXY", "http://other:1")])).unwrap();
        assert_eq!(
            p.map(|p| (p.url.to_string(), p.source)),
            Some(("socks5://127.0.0.1:1080/".into(), Source::Kubeconfig))
        );
        assert!(choose(&server, Some("ftp://x:1"), env(&[])).unwrap_err().contains("not supported"));
        assert!(choose(&server, Some("http://"), env(&[])).is_err());
        let bad = choose(&"https://api.example.com".parse().unwrap(), None, env(&[("HTTPS_PROXY", "http://[bad")]));
        assert!(bad.unwrap_err().contains("HTTPS_PROXY"));
    }
}
