//! Real networks, on loopback: gzip and HTTP/2 against the real API server (the
//! request trace records protocol and bytes on the wire), and every command through
//! real proxy servers from Debian's packages (tinyproxy for HTTP CONNECT, microsocks
//! for SOCKS5; tests/run.sh installs them), chosen as kubectl chooses: the kubeconfig's
//! proxy-url, else HTTPS_PROXY unless NO_PROXY names the host or it is loopback.

mod common;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Cluster, Run, cluster};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A proxy server of ours, stopped when dropped; its log is a file.
struct Server {
    child: Child,
    log: PathBuf,
    addr: SocketAddr,
}

impl Server {
    fn wait_ready(self) -> Server {
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(self.addr).is_err() {
            assert!(Instant::now() < deadline, "proxy on {} never listened: {}", self.addr, self.log_text());
            std::thread::sleep(Duration::from_millis(50));
        }
        self
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// tinyproxy allowing CONNECT to `connect_port` only.
fn tinyproxy(c: &Cluster, connect_port: u16) -> Server {
    tinyproxy_with(c, connect_port, "")
}

/// tinyproxy with `extra` lines in its configuration (BasicAuth).
fn tinyproxy_with(c: &Cluster, connect_port: u16, extra: &str) -> Server {
    let port = free_port();
    let dir = c.dir.join(format!("tinyproxy-{port}"));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("tinyproxy.log");
    let conf = dir.join("tinyproxy.conf");
    std::fs::write(
        &conf,
        format!(
            "Port {port}\nListen 127.0.0.1\nTimeout 60\nAllow 127.0.0.1\nConnectPort {connect_port}\nLogFile \"{}\"\nLogLevel Info\nMaxClients 50\n{extra}",
            log.display()
        ),
    )
    .unwrap();
    let child = Command::new("tinyproxy")
        .args(["-d", "-c", conf.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tinyproxy (Debian package tinyproxy-bin; tests/run.sh installs it)");
    Server { child, log, addr: format!("127.0.0.1:{port}").parse().unwrap() }.wait_ready()
}

fn microsocks(c: &Cluster) -> Server {
    let port = free_port();
    let log = c.dir.join(format!("microsocks-{port}.log"));
    let child = Command::new("microsocks")
        .args(["-i", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        // microsocks logs each tunnel ("client[4] 127.0.0.1: connected to HOST:PORT") on stderr.
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("microsocks (Debian package microsocks; tests/run.sh installs it)");
    Server { child, log, addr: format!("127.0.0.1:{port}").parse().unwrap() }.wait_ready()
}

/// The viewer's kubeconfig with `extra` added to its cluster entry, and optionally another server.
fn kubeconfig_with(c: &Cluster, name: &str, extra: &str, server: Option<&str>) -> PathBuf {
    let mut text = std::fs::read_to_string(c.kubeconfig("viewer")).unwrap();
    if let Some(s) = server {
        text = text.replace(&c.env("SERVER"), s);
    }
    let text = text.replacen("    server: ", &format!("    {extra}\n    server: "), 1);
    let path = c.dir.join(format!("{name}.kubeconfig"));
    std::fs::write(&path, text).unwrap();
    path
}

fn coord_with(kubeconfig: &Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-coord"));
    cmd.args(args).env("KUBECONFIG", kubeconfig);
    for var in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run::of(cmd)
}

/// One line of KUBECTL_COORD_TRACE: (path, protocol, wire bytes, decoded bytes).
fn traced(trace: &Path) -> Vec<(String, String, u64, u64)> {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Some((f.get(2)?.to_string(), f.get(3)?.to_string(), f.get(4)?.parse().ok()?, f.get(5)?.parse().ok()?))
        })
        .collect()
}

/// Every command, each reading something real.
fn every_command(kubeconfig: &Path, env: &[(&str, &str)]) {
    for args in [
        vec!["version"],
        vec!["leases", "-n", "kube-system"],
        vec!["overlaps", "-A"],
        vec!["fields", "-n", "kube-system"],
        vec!["owners", "--all", "-n", "kube-system"],
        vec!["fields", "lease/kube-scheduler", "-n", "kube-system"],
        vec!["trace", "lease/kube-scheduler", "-n", "kube-system"],
    ] {
        coord_with(kubeconfig, env, &args).ok();
    }
}

#[test]
fn large_lists_arrive_gzipped_over_http2_and_disable_compression_is_honoured() {
    let c = cluster();
    let ns = c.fresh_namespace("net-gzip");
    // ~600 ConfigMaps with a long annotation: a metadata list well over the server's
    // 128 KiB compression threshold.
    let note = "x".repeat(300);
    let items: Vec<String> = (0..600)
        .map(|i| format!("- apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: cm-{i}, namespace: {ns}, annotations: {{note: {note}}}}}\n"))
        .collect();
    c.apply(&format!("apiVersion: v1\nkind: List\nitems:\n{}", items.concat()));

    let list = |kubeconfig: &Path, env: &[(&str, &str)]| {
        let trace = c.dir.join(format!("{ns}-{}.trace", free_port()));
        let mut with_trace: Vec<(&str, &str)> = env.to_vec();
        let trace_text = trace.to_str().unwrap().to_string();
        with_trace.push(("KUBECTL_COORD_TRACE", &trace_text));
        coord_with(kubeconfig, &with_trace, &["fields", "-n", &ns, "--kinds", "configmaps"]).ok();
        traced(&trace).into_iter().find(|(p, ..)| p.contains("/configmaps?")).expect("the configmaps list")
    };
    let viewer = c.kubeconfig("viewer");
    let (_, protocol, wire, decoded) = list(&viewer, &[]);
    assert_eq!(protocol, "HTTP/2", "the API server offers h2 over TLS");
    assert!(decoded > 200_000, "the list should be large: {decoded} bytes");
    assert!(wire * 5 < decoded, "gzip: {wire} bytes on the wire for {decoded} decoded");

    let plain = kubeconfig_with(&c, &format!("{ns}-nogzip"), "disable-compression: true", None);
    let (_, _, wire, decoded) = list(&plain, &[]);
    assert!(wire >= decoded, "disable-compression: {wire} bytes on the wire for {decoded}");

    let (_, protocol, ..) = list(&viewer, &[("KUBECTL_COORD_HTTP1", "1")]);
    assert_eq!(protocol, "HTTP/1.1");
}

/// The report with the server's clock taken out: two runs a second apart differ there only.
fn without_server_time(mut report: serde_json::Value) -> serde_json::Value {
    report.as_object_mut().unwrap().remove("serverTime");
    report
}

#[test]
fn metadata_lists_arrive_as_protobuf_and_read_as_their_json() {
    let c = cluster();
    let ns = c.fresh_namespace("net-proto");
    // What metadata can hold: labels and annotations, an owner reference (to a Deployment
    // that is not there: a finding), a finalizer holding a deletion, two field managers.
    c.apply(&format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: {ns}, labels: {{app: web}}}}\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec: {{containers: [{{name: c, image: nginx}}]}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: {ns}\n  labels: {{app: held}}\n  annotations: {{note: \"ünïcode\"}}\n  finalizers: [example.com/hold]\n  ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: gone, uid: 00000000-0000-0000-0000-000000000001, blockOwnerDeletion: true}}]\n"
    ));
    c.kubectl(&["label", "deployment/web", "-n", &ns, "tier=front"]).ok();
    c.kubectl(&["delete", "configmap/held", "-n", &ns, "--wait=false"]).ok();
    let viewer = c.kubeconfig("viewer");
    let lists = |trace: &Path| -> Vec<(String, String, u64)> {
        std::fs::read_to_string(trace)
            .unwrap()
            .lines()
            .filter(|l| l.contains("as=PartialObjectMetadataList"))
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (f[1].to_string(), f[2].split('?').next().unwrap().to_string(), f[5].parse().unwrap())
            })
            .collect()
    };
    let mut sizes_compared = 0;
    for args in [
        vec!["owners", "--all", "-n", &ns, "-o", "json"],
        vec!["fields", "-n", &ns, "-o", "json"],
        vec!["overlaps", "-n", &ns, "-o", "json"],
        vec!["check", "-n", &ns, "-o", "json"],
    ] {
        let (pb_trace, json_trace) =
            (c.dir.join(format!("{ns}-{}-pb", args[0])), c.dir.join(format!("{ns}-{}-json", args[0])));
        let pb_text = pb_trace.to_str().unwrap().to_string();
        let json_text = json_trace.to_str().unwrap().to_string();
        let pb = coord_with(&viewer, &[("KUBECTL_COORD_TRACE", &pb_text)], &args).ok().json();
        let json = coord_with(&viewer, &[("KUBECTL_COORD_TRACE", &json_text), ("KUBECTL_COORD_PROTOBUF", "0")], &args)
            .ok()
            .json();
        assert_eq!(without_server_time(pb), without_server_time(json), "{args:?}");
        let (pb_lists, json_lists) = (lists(&pb_trace), lists(&json_trace));
        assert!(!pb_lists.is_empty(), "{args:?} read no metadata list");
        assert!(pb_lists.iter().all(|(accept, ..)| accept.starts_with("application/vnd.kubernetes.protobuf;")));
        assert!(json_lists.iter().all(|(accept, ..)| accept.starts_with("application/json;")));
        // The same list is smaller as protobuf: the server did answer in protobuf.
        let configmaps = format!("/api/v1/namespaces/{ns}/configmaps");
        let size = |lists: &[(String, String, u64)]| lists.iter().find(|(_, p, _)| *p == configmaps).map(|l| l.2);
        if let (Some(pb), Some(json)) = (size(&pb_lists), size(&json_lists)) {
            assert!(pb * 10 < json * 7, "{args:?}: the ConfigMaps list is {pb} bytes as protobuf, {json} as JSON");
            sizes_compared += 1;
        }
    }
    assert!(sizes_compared > 0, "no command listed ConfigMaps both ways");
    // The finding read from the protobuf list is the one the JSON shows. Only the one in this
    // namespace: cluster-scoped objects other tests left (a ClusterRole naming a namespaced
    // owner, CO203) are findings of `owners --all -n` too, and may come first.
    let owners = coord_with(&viewer, &[], &["owners", "--all", "-n", &ns, "-o", "json"]).ok().json();
    let here: Vec<_> = owners["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["object"]["namespace"] == ns.as_str())
        .map(|f| f["object"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(here, ["held"], "{owners}");
}

#[test]
fn every_command_works_through_an_http_connect_proxy_named_in_the_kubeconfig() {
    let c = cluster();
    let api = c.api_addr();
    let proxy = tinyproxy(&c, api.port());
    let kubeconfig = kubeconfig_with(&c, "via-tinyproxy", &format!("proxy-url: http://{}", proxy.addr), None);
    every_command(&kubeconfig, &[]);
    let log = proxy.log_text();
    let connects = log.matches(&format!("CONNECT 127.0.0.1:{}", api.port())).count();
    assert!(connects >= 1, "the proxy saw no CONNECT to the API server:\n{log}");
    // kubectl itself goes the same way (the oracle for what a proxy-url means).
    let mut kubectl = Command::new(c.bin().join("kubectl"));
    kubectl.args(["get", "ns", "default"]).env("KUBECONFIG", &kubeconfig);
    Run::of(kubectl).ok();
}

/// A proxy that asks for credentials gets them from the proxy URL as kubectl sends them:
/// percent-decoded, as Basic; a wrong password is a refusal by the proxy (tinyproxy answers
/// CONNECT with 401, not 407), said on one line without the password.
/// (tinyproxy takes only letters, digits, `-`, `_` and `.` in a password, so the escape
/// tested is `%2E` for `.`; the decoder itself is unit-tested with `%40`.)
#[test]
fn proxy_credentials_from_the_url_are_sent_decoded_as_basic() {
    let c = cluster();
    let api = c.api_addr();
    let proxy = tinyproxy_with(&c, api.port(), "BasicAuth coord-user p.ss-w0rd\n");
    let url = |password: &str| format!("proxy-url: http://coord-user:{password}@{}", proxy.addr);
    let good = kubeconfig_with(&c, "via-tinyproxy-auth", &url("p%2Ess-w0rd"), None);
    let run = coord_with(&good, &[], &["leases", "-n", "kube-system"]).ok();
    assert!(run.stdout.contains("kube-controller-manager"), "{}", run.stdout);
    // kubectl, the oracle for what the URL means, gets through the same way.
    let mut kubectl = Command::new(c.bin().join("kubectl"));
    kubectl.args(["get", "ns", "default"]).env("KUBECONFIG", &good);
    Run::of(kubectl).ok();
    let bad = kubeconfig_with(&c, "via-tinyproxy-bad-auth", &url("wrong"), None);
    let run = coord_with(&bad, &[], &["leases", "-n", "kube-system"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("the proxy refused to open a tunnel"), "{}", run.stderr);
    assert!(!run.stderr.contains("wrong"), "the password is not printed: {}", run.stderr);
}

#[test]
fn every_command_works_through_a_socks5_proxy() {
    let c = cluster();
    let proxy = microsocks(&c);
    let kubeconfig = kubeconfig_with(&c, "via-socks", &format!("proxy-url: socks5://{}", proxy.addr), None);
    every_command(&kubeconfig, &[]);
    let log = proxy.log_text();
    assert!(log.contains(&format!("connected to 127.0.0.1:{}", c.api_addr().port())), "microsocks log:\n{log}");
}

/// A name other than `localhost` that /etc/hosts maps to a loopback address: Go (and so
/// kubectl) proxies it, where it never proxies localhost or a loopback IP.
fn loopback_alias() -> String {
    let hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    hosts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let ip: std::net::IpAddr = f.next()?.parse().ok()?;
            ip.is_loopback().then(|| {
                f.find(|n| {
                    !n.starts_with('#') && *n != "localhost" && !n.starts_with("localhost.") && !n.starts_with("ip6-")
                })
            })?
        })
        .next()
        .expect(
            "this test needs a name other than localhost that /etc/hosts maps to 127.0.0.1 (the machine's own name)",
        )
        .to_string()
}

#[test]
fn https_proxy_from_the_environment_as_kubectl_applies_it() {
    let c = cluster();
    let api = c.api_addr();
    let proxy = tinyproxy(&c, api.port());
    let alias = loopback_alias();
    // The API server's certificate names localhost; reach it by the alias through the proxy.
    let by_alias =
        kubeconfig_with(&c, "by-alias", "tls-server-name: localhost", Some(&format!("https://{alias}:{}", api.port())));
    let proxy_url = format!("http://{}", proxy.addr);
    let via_env = [("HTTPS_PROXY", proxy_url.as_str())];
    coord_with(&by_alias, &via_env, &["leases", "-n", "kube-system"]).ok();
    let tunnel = format!("CONNECT {alias}:{}", api.port());
    let seen = proxy.log_text().matches(&tunnel).count();
    assert!(seen >= 1, "HTTPS_PROXY was not used:\n{}", proxy.log_text());

    // NO_PROXY naming the host: straight to the server (the proxy sees nothing more).
    coord_with(
        &by_alias,
        &[("HTTPS_PROXY", &proxy_url), ("NO_PROXY", &format!("other.example,{alias}"))],
        &["leases", "-n", "kube-system"],
    )
    .ok();
    assert_eq!(proxy.log_text().matches(&tunnel).count(), seen, "NO_PROXY was not honoured");
    // A loopback IP is never proxied, as in kubectl: a dead HTTPS_PROXY does not matter.
    let dead = format!("http://127.0.0.1:{}", free_port());
    coord_with(&c.kubeconfig("viewer"), &[("HTTPS_PROXY", &dead)], &["leases", "-n", "kube-system"]).ok();
    // HTTPS_PROXY is for https servers only; a dead HTTP_PROXY does not matter either.
    coord_with(&by_alias, &[("HTTP_PROXY", &dead)], &["leases", "-n", "kube-system"]).ok();
}

#[test]
fn a_proxy_that_is_down_or_refuses_is_one_line_naming_it() {
    let c = cluster();
    let dead = format!("http://127.0.0.1:{}", free_port());
    let kubeconfig = kubeconfig_with(&c, "via-dead-proxy", &format!("proxy-url: {dead}"), None);
    let started = Instant::now();
    let run = coord_with(&kubeconfig, &[], &["leases", "-n", "kube-system"]).code(1);
    run.one_line_error(&format!("through proxy {dead}"));
    assert!(started.elapsed() < Duration::from_secs(10), "a refused connection should fail fast");

    // tinyproxy refusing to CONNECT to the API server's port.
    let refusing = tinyproxy(&c, free_port());
    let kubeconfig = kubeconfig_with(&c, "via-refusing-proxy", &format!("proxy-url: http://{}", refusing.addr), None);
    let run = coord_with(&kubeconfig, &[], &["overlaps", "-A"]).code(1);
    run.one_line_error(&format!("through proxy http://{}", refusing.addr));

    let bad = kubeconfig_with(&c, "via-ftp-proxy", "proxy-url: ftp://127.0.0.1:21", None);
    coord_with(&bad, &[], &["leases"]).code(2).one_line_error("not supported");
}

/// Every way a connection can fail, with a token, a proxy password and a client key all set:
/// none of them is ever printed, and each failure is one plain line. The proxy's user name
/// stays, its password shows as xxxxx (as Go's url.Redacted, and so kubectl, print it).
#[test]
fn no_secret_in_any_connection_error() {
    const TOKEN: &str = "s3cr3t-t0ken-4711";
    const PASSWORD: &str = "pr0xy-pa55word";
    let c = cluster();
    let dir = c.dir.join(format!("secrets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A client certificate and key of no authority the server knows.
    let (cert, key) = (dir.join("client.crt"), dir.join("client.key"));
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=nobody", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let b64 = |path: &Path| {
        let out = Command::new("base64").arg("-w0").arg(path).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let key_data = b64(&key);
    let key_text = std::fs::read_to_string(&key).unwrap();
    let key_line = key_text.lines().nth(5).unwrap().to_string();
    let secrets = [TOKEN, PASSWORD, &key_data[..40], &key_line];

    let kubeconfig = |name: &str, server: &str, ca: &Path, extra: &str| {
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: x\n  cluster:\n    server: {server}\n    \
             certificate-authority-data: {}\n    {extra}\nusers:\n- name: x\n  user:\n    client-certificate-data: {}\n    \
             client-key-data: {key_data}\ncontexts:\n- name: x\n  context: {{cluster: x, user: x}}\ncurrent-context: x\n",
            b64(ca),
            b64(&cert)
        );
        let path = dir.join(format!("{name}.kubeconfig"));
        std::fs::write(&path, text).unwrap();
        path
    };
    let ca = c.dir.join("pki/ca.crt");
    let api = c.env("SERVER");
    let proxy_at = |addr: &str| format!("http://coord-proxy-user:{PASSWORD}@{addr}");
    let dead = format!("127.0.0.1:{}", free_port());
    let refusing = tinyproxy(&c, free_port());
    let hole = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = format!("https://{}", hole.local_addr().unwrap());
    let env_proxy = proxy_at(&dead);

    // (case, kubeconfig, environment, what the one line says)
    type Case<'a> = (&'a str, PathBuf, Vec<(&'a str, &'a str)>, &'a str);
    let cases: Vec<Case> = vec![
        (
            "unreachable server",
            kubeconfig("unreachable", &format!("https://127.0.0.1:{}", free_port()), &ca, ""),
            vec![("HTTPS_PROXY", &env_proxy)],
            "connection refused",
        ),
        (
            "dead proxy (proxy-url)",
            kubeconfig("dead-proxy", &api, &ca, &format!("proxy-url: {}", proxy_at(&dead))),
            vec![],
            "cannot connect to the proxy: connection refused",
        ),
        (
            "dead proxy (HTTPS_PROXY)",
            kubeconfig("dead-env-proxy", "https://coord-api.invalid:6443", &ca, ""),
            vec![("HTTPS_PROXY", &env_proxy)],
            "cannot connect to the proxy: connection refused",
        ),
        (
            "refused CONNECT",
            kubeconfig("refusing-proxy", &api, &ca, &format!("proxy-url: {}", proxy_at(&refusing.addr.to_string()))),
            vec![],
            "the proxy refused to open a tunnel to the API server",
        ),
        (
            "TLS failure",
            kubeconfig("wrong-ca", &api, &cert, ""),
            vec![("HTTPS_PROXY", &env_proxy)],
            "the TLS handshake failed",
        ),
        ("401", kubeconfig("unknown-client", &api, &ca, ""), vec![("HTTPS_PROXY", &env_proxy)], "401 Unauthorized"),
        ("timeout", kubeconfig("silent", &silent, &ca, ""), vec![], "no answer within --request-timeout 2s"),
    ];
    for (case, kubeconfig, env, says) in &cases {
        for args in [&["leases"][..], &["check", "-A", "-o", "json"]] {
            let mut all = args.to_vec();
            all.extend(["--token", TOKEN, "--request-timeout", "2s"]);
            let run = coord_with(kubeconfig, env, &all).code(1);
            run.one_line_error(says);
            for secret in secrets {
                assert!(
                    !run.stdout.contains(secret) && !run.stderr.contains(secret),
                    "{case}: {secret:?} printed: {}{}",
                    run.stdout,
                    run.stderr
                );
            }
            if case.contains("proxy") || case.contains("CONNECT") {
                assert!(run.stderr.contains("through proxy http://coord-proxy-user:xxxxx@"), "{case}: {}", run.stderr);
            }
            // One plain sentence: none of the layers' own prefixes.
            for layer in ["ServiceError", "client error (Connect)", "tunnel error", "os error"] {
                assert!(!run.stderr.contains(layer), "{case}: {}", run.stderr);
            }
        }
    }
    drop(hole);
}
