//! Turns kubectl's connection flags and the (merged) kubeconfig into a `kube::Config`.
//!
//! Overrides are applied to the kubeconfig entries themselves, then one synthetic
//! context is handed to kube's loader, so certificate files, exec plugins and
//! auth providers are read by kube exactly as for an unmodified kubeconfig.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use kube::config::{
    AuthInfo, Cluster, Context, KubeConfigOptions, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
};

use super::args::ConnectionArgs;
use crate::error::usage;

pub const USER_AGENT: &str = concat!("kubectl-coord/", env!("CARGO_PKG_VERSION"));

/// Everything later code needs to know about where it is connected.
#[derive(Debug, Clone)]
pub struct Target {
    pub config: kube::Config,
    /// The context name, when one was used.
    pub context: Option<String>,
    pub server: String,
    /// -n, else the context's namespace, else "default".
    pub namespace: String,
    pub request_timeout: Option<Duration>,
    /// The proxy every request goes through, if any.
    pub proxy: Option<super::proxy::Proxy>,
}

pub async fn resolve(args: &ConnectionArgs) -> Result<Target> {
    let request_timeout = (!args.request_timeout.is_zero()).then_some(args.request_timeout);
    let loaded = load_kubeconfig(args.kubeconfig.as_deref())?;
    let (kubeconfig, context, server, context_namespace) = select(args, loaded)?;
    let kubeconfig_proxy =
        kubeconfig.clusters.first().and_then(|c| c.cluster.as_ref()).and_then(|c| c.proxy_url.clone());
    let options = KubeConfigOptions { context: Some(SYNTHETIC.into()), cluster: None, user: None };
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| usage(format!("kubeconfig: {e}")))?;
    config.headers.push((http::header::USER_AGENT, http::HeaderValue::from_static(USER_AGENT)));
    // kube applies HTTPS_PROXY and NO_PROXY differently from kubectl: decide as kubectl does.
    let proxy = super::proxy::choose(&config.cluster_url, kubeconfig_proxy.as_deref(), |k| std::env::var(k).ok())
        .map_err(usage)?;
    config.proxy_url = None;
    if let Some(timeout) = request_timeout {
        config.connect_timeout = Some(timeout);
        config.read_timeout = Some(timeout);
        config.write_timeout = Some(timeout);
        config.reset_reader_on_write = true;
    }
    let namespace = args.namespace.clone().or(context_namespace).unwrap_or_else(|| "default".into());
    if namespace.is_empty() {
        return Err(usage("a namespace must not be empty (-n)"));
    }
    Ok(Target { config, context, server, namespace, request_timeout, proxy })
}

/// The namespace of the context the flags and kubeconfig pick, read from the kubeconfig
/// alone (no cluster is asked); None without a kubeconfig, a context, or a namespace in it.
pub fn context_namespace(args: &ConnectionArgs) -> Option<String> {
    let loaded = load_kubeconfig(args.kubeconfig.as_deref()).ok().flatten();
    loaded.as_ref()?;
    select(args, loaded).ok().and_then(|(.., namespace)| namespace)
}

/// The namespace a command without a cluster works in: -n, else the kubeconfig context's,
/// else "default" (the precedence `load` gives a session), read from the kubeconfig alone.
pub fn offline_namespace(args: &ConnectionArgs) -> String {
    args.namespace.clone().or_else(|| context_namespace(args)).unwrap_or_else(|| "default".into())
}

/// Reads `--kubeconfig` (must exist), else every existing file of `$KUBECONFIG`
/// merged first-wins (missing entries are skipped, as client-go does), else
/// `~/.kube/config` if present. `None` when there is nothing to read.
pub fn load_kubeconfig(explicit: Option<&Path>) -> Result<Option<Kubeconfig>> {
    if let Some(path) = explicit {
        if !path.exists() {
            return Err(usage(format!("kubeconfig {}: no such file", path.display())));
        }
        return read_one(path).map(Some);
    }
    let paths: Vec<PathBuf> = match std::env::var_os("KUBECONFIG") {
        Some(value) if !value.is_empty() => kubeconfig_list(&value).into_iter().filter(|p| p.exists()).collect(),
        _ => home_kubeconfig().into_iter().filter(|p| p.exists()).collect(),
    };
    let mut merged: Option<Kubeconfig> = None;
    for path in paths {
        let next = read_one(&path)?;
        merged = Some(match merged {
            None => next,
            Some(m) => m.merge(next).map_err(|e| usage(format!("kubeconfig {}: {e}", path.display())))?,
        });
    }
    Ok(merged)
}

fn read_one(path: &Path) -> Result<Kubeconfig> {
    Kubeconfig::read_from(path).map_err(|e| {
        let detail = match &e {
            // kube's read error wraps the io error; say which file and why, on one line.
            kube::config::KubeconfigError::ReadConfig(io, _) => io.to_string(),
            other => other.to_string().replace('\n', " "),
        };
        usage(format!("kubeconfig {}: {detail}", path.display()))
    })
}

/// The files KUBECONFIG names, split as kubectl splits it (':' on Unix, ';' on Windows),
/// empty entries dropped and each file once, first place kept (client-go's loading rules).
fn kubeconfig_list(value: &std::ffi::OsStr) -> Vec<PathBuf> {
    match value.to_str() {
        Some(text) => split_list(text, if cfg!(windows) { ';' } else { ':' }),
        // Not UTF-8 (possible on Unix only): the platform's own splitting.
        None => std::env::split_paths(value).collect(),
    }
}

fn split_list(value: &str, separator: char) -> Vec<PathBuf> {
    let mut seen = std::collections::HashSet::new();
    value.split(separator).filter(|p| !p.is_empty() && seen.insert(*p)).map(PathBuf::from).collect()
}

fn home_kubeconfig() -> Option<PathBuf> {
    let env = |name: &str| std::env::var(name).ok();
    home_dir(cfg!(windows), env, |p| p.join(".kube").join("config").is_file(), |p| p.is_dir())
        .map(|h| h.join(".kube").join("config"))
}

/// The home directory as kubectl finds it (client-go's homedir.HomeDir): $HOME on Unix. On
/// Windows the first of %HOME%, %HOMEDRIVE%%HOMEPATH% and %USERPROFILE% that holds
/// .kube\config; else the first of %HOME%, %USERPROFILE% and %HOMEDRIVE%%HOMEPATH% that is a
/// directory; else the first of them that is set.
fn home_dir(
    windows: bool,
    env: impl Fn(&str) -> Option<String>,
    has_kubeconfig: impl Fn(&Path) -> bool,
    is_dir: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    if !windows {
        return set("HOME").map(PathBuf::from);
    }
    let drive_path = set("HOMEDRIVE").zip(set("HOMEPATH")).map(|(d, p)| format!("{d}{p}"));
    let (home, profile) = (set("HOME"), set("USERPROFILE"));
    let with_config = [&home, &drive_path, &profile].into_iter().flatten().find(|p| has_kubeconfig(Path::new(p)));
    let preferred = [&home, &profile, &drive_path].into_iter().flatten();
    let found = with_config
        .or_else(|| preferred.clone().find(|p| is_dir(Path::new(p))))
        .or_else(|| preferred.into_iter().next());
    found.map(PathBuf::from)
}

const SYNTHETIC: &str = "kubectl-coord";

/// Picks context, cluster and user, applies the flag overrides, and returns a
/// kubeconfig holding just that selection under one synthetic context.
fn select(
    args: &ConnectionArgs,
    loaded: Option<Kubeconfig>,
) -> Result<(Kubeconfig, Option<String>, String, Option<String>)> {
    let kc = loaded.unwrap_or_default();
    let context_name = args.context.clone().or_else(|| kc.current_context.clone().filter(|c| !c.is_empty()));
    let context: Context = match &context_name {
        Some(name) => kc
            .contexts
            .iter()
            .find(|c| &c.name == name)
            .and_then(|c| c.context.clone())
            .ok_or_else(|| usage(format!("context {name:?} not found in kubeconfig")))?,
        None if args.server.is_some() => Context::default(),
        None if kc.contexts.is_empty() && kc.clusters.is_empty() => {
            return Err(usage(
                "no kubeconfig found: set KUBECONFIG, pass --kubeconfig, or give --server (and --token)",
            ));
        }
        None => {
            return Err(usage("the kubeconfig sets no current-context: pass --context NAME"));
        }
    };

    let cluster_name = args.cluster.clone().unwrap_or_else(|| context.cluster.clone());
    let mut cluster: Cluster = match kc.clusters.iter().find(|c| c.name == cluster_name) {
        Some(found) => found.cluster.clone().unwrap_or_default(),
        None if args.server.is_some() && args.cluster.is_none() => Cluster::default(),
        None => {
            return Err(usage(format!("cluster {cluster_name:?} not found in kubeconfig")));
        }
    };
    let user_name = args.user.clone().or_else(|| context.user.clone());
    let mut user: AuthInfo = match &user_name {
        Some(name) => match kc.auth_infos.iter().find(|u| &u.name == name) {
            Some(found) => found.auth_info.clone().unwrap_or_default(),
            None if args.user.is_some() => {
                return Err(usage(format!("user {name:?} not found in kubeconfig")));
            }
            // client-go tolerates a context naming a missing user.
            None => AuthInfo::default(),
        },
        None => AuthInfo::default(),
    };

    apply_cluster_overrides(args, &mut cluster)?;
    apply_user_overrides(args, &mut user);
    let server = cluster.server.clone().unwrap_or_default();
    if server.is_empty() {
        return Err(usage(format!("cluster {cluster_name:?} has no server address (set --server)")));
    }

    let namespace = context.namespace.clone().filter(|n| !n.is_empty());
    let synthetic = Kubeconfig {
        clusters: vec![NamedCluster { name: SYNTHETIC.into(), cluster: Some(cluster), ..Default::default() }],
        auth_infos: vec![NamedAuthInfo { name: SYNTHETIC.into(), auth_info: Some(user), ..Default::default() }],
        contexts: vec![NamedContext {
            name: SYNTHETIC.into(),
            context: Some(Context {
                cluster: SYNTHETIC.into(),
                user: Some(SYNTHETIC.into()),
                namespace: namespace.clone(),
                ..Default::default()
            }),
            ..Default::default()
        }],
        current_context: Some(SYNTHETIC.into()),
        ..Default::default()
    };
    Ok((synthetic, context_name, server, namespace))
}

fn apply_cluster_overrides(args: &ConnectionArgs, cluster: &mut Cluster) -> Result<()> {
    if let Some(server) = &args.server {
        let uri: http::Uri = server.parse().map_err(|_| usage(format!("invalid --server {server:?}")))?;
        if uri.scheme().is_none() || uri.host().is_none() {
            return Err(usage(format!("invalid --server {server:?}: expected https://HOST[:PORT]")));
        }
        cluster.server = Some(server.clone());
    }
    if let Some(ca) = &args.certificate_authority {
        if !ca.is_file() {
            return Err(usage(format!("--certificate-authority {}: no such file", ca.display())));
        }
        cluster.certificate_authority = Some(ca.display().to_string());
        cluster.certificate_authority_data = None;
    }
    if args.insecure_skip_tls_verify {
        cluster.insecure_skip_tls_verify = Some(true);
        // As in kubectl: a CA and insecure together make no sense; insecure wins.
        cluster.certificate_authority = None;
        cluster.certificate_authority_data = None;
    }
    Ok(())
}

fn apply_user_overrides(args: &ConnectionArgs, user: &mut AuthInfo) {
    if let Some(token) = &args.token {
        // A token on the command line replaces every other credential of the user.
        *user = AuthInfo {
            token: Some(token.clone().into()),
            impersonate: user.impersonate.take(),
            impersonate_groups: user.impersonate_groups.take(),
            impersonate_uid: user.impersonate_uid.take(),
            ..Default::default()
        };
    }
    if let Some(as_user) = &args.as_user {
        user.impersonate = Some(as_user.clone());
    }
    if !args.as_group.is_empty() {
        user.impersonate_groups = Some(args.as_group.clone());
    }
    if let Some(uid) = &args.as_uid {
        user.impersonate_uid = Some(uid.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_lists_split_as_kubectl_splits_them() {
        let unix = split_list("/a/config::/b/config:/a/config", ':');
        assert_eq!(unix, vec![PathBuf::from("/a/config"), PathBuf::from("/b/config")]);
        // A drive letter's colon is not a separator on Windows.
        let windows = split_list(r"C:\Users\me\.kube\config;;D:\k\dev.yaml;C:\Users\me\.kube\config", ';');
        assert_eq!(windows, vec![PathBuf::from(r"C:\Users\me\.kube\config"), PathBuf::from(r"D:\k\dev.yaml")]);
    }

    /// client-go's homedir.HomeDir, case by case, with the environment and the file
    /// system given as closures.
    #[test]
    fn home_directory_rules_for_unix_and_windows() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        let none = |_: &Path| false;
        let home = |vars, windows, config: &'static [&str], dirs: &'static [&str]| {
            home_dir(
                windows,
                env(vars),
                |p: &Path| config.iter().any(|c| Path::new(c) == p),
                |p: &Path| dirs.iter().any(|d| Path::new(d) == p),
            )
            .map(|p| p.display().to_string())
        };
        let all: &[(&str, &str)] =
            &[("HOME", r"H:\home"), ("USERPROFILE", r"C:\Users\me"), ("HOMEDRIVE", "C:"), ("HOMEPATH", r"\hp")];
        assert_eq!(home(&[("HOME", "/home/me"), ("USERPROFILE", "x")], false, &[], &[]).as_deref(), Some("/home/me"));
        assert_eq!(home_dir(false, env(&[("USERPROFILE", "x")]), none, none), None);
        // Windows: the first that holds .kube\config, in the order HOME, HOMEDRIVE+HOMEPATH, USERPROFILE...
        assert_eq!(home(all, true, &[r"C:\hp", r"C:\Users\me"], &[]).as_deref(), Some(r"C:\hp"));
        // ...else the first directory, in the order HOME, USERPROFILE, HOMEDRIVE+HOMEPATH...
        assert_eq!(home(all, true, &[], &[r"C:\hp", r"C:\Users\me"]).as_deref(), Some(r"C:\Users\me"));
        // ...else the first set; %HOMEDRIVE% without %HOMEPATH% counts as unset.
        assert_eq!(home(all, true, &[], &[]).as_deref(), Some(r"H:\home"));
        let profile_only: &[(&str, &str)] = &[("USERPROFILE", r"C:\Users\me"), ("HOMEDRIVE", "C:")];
        assert_eq!(home(profile_only, true, &[], &[]).as_deref(), Some(r"C:\Users\me"));
        assert_eq!(home_dir(true, env(&[("HOME", "")]), none, none), None);
    }

    fn kubeconfig() -> Kubeconfig {
        Kubeconfig::from_yaml(
            r#"
apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: c1, user: u1, namespace: team-a}
- name: other
  context: {cluster: c2, user: missing}
clusters:
- name: c1
  cluster: {server: "https://127.0.0.1:6443"}
- name: c2
  cluster: {server: "https://127.0.0.2:6443"}
users:
- name: u1
  user: {token: secret-one}
"#,
        )
        .unwrap()
    }

    fn args() -> ConnectionArgs {
        ConnectionArgs::default()
    }

    #[test]
    fn current_context_namespace_and_server() {
        let (_, ctx, server, ns) = select(&args(), Some(kubeconfig())).unwrap();
        assert_eq!(ctx.as_deref(), Some("dev"));
        assert_eq!(server, "https://127.0.0.1:6443");
        assert_eq!(ns.as_deref(), Some("team-a"));
    }

    #[test]
    fn context_and_cluster_flags_select_entries() {
        let a = ConnectionArgs { context: Some("other".into()), ..args() };
        let (_, _, server, ns) = select(&a, Some(kubeconfig())).unwrap();
        assert_eq!(server, "https://127.0.0.2:6443");
        assert_eq!(ns, None);
        let a = ConnectionArgs { cluster: Some("c2".into()), ..args() };
        assert_eq!(select(&a, Some(kubeconfig())).unwrap().2, "https://127.0.0.2:6443");
    }

    #[test]
    fn unknown_names_are_usage_errors() {
        for (a, want) in [
            (ConnectionArgs { context: Some("nope".into()), ..args() }, "context \"nope\" not found"),
            (ConnectionArgs { cluster: Some("nope".into()), ..args() }, "cluster \"nope\" not found"),
            (ConnectionArgs { user: Some("nope".into()), ..args() }, "user \"nope\" not found"),
        ] {
            let err = select(&a, Some(kubeconfig())).unwrap_err();
            assert!(err.to_string().contains(want), "{err}");
            assert_eq!(crate::error::exit_code_for(&err), crate::error::EXIT_USAGE);
        }
    }

    #[test]
    fn server_and_token_work_without_kubeconfig() {
        let a = ConnectionArgs {
            server: Some("https://10.1.2.3:443".into()),
            token: Some("t0k3n".into()),
            as_user: Some("jane".into()),
            as_group: vec!["g1".into(), "g2".into()],
            ..args()
        };
        let (kc, ctx, server, _) = select(&a, None).unwrap();
        assert_eq!(ctx, None);
        assert_eq!(server, "https://10.1.2.3:443");
        let user = kc.auth_infos[0].auth_info.clone().unwrap();
        assert_eq!(user.impersonate.as_deref(), Some("jane"));
        assert_eq!(user.impersonate_groups, Some(vec!["g1".into(), "g2".into()]));
        assert!(user.token.is_some());
    }

    #[test]
    fn token_flag_replaces_other_credentials() {
        let mut user = AuthInfo { client_certificate: Some("/x".into()), ..Default::default() };
        apply_user_overrides(&ConnectionArgs { token: Some("t".into()), ..args() }, &mut user);
        assert!(user.client_certificate.is_none() && user.token.is_some());
    }

    #[test]
    fn nothing_to_connect_to() {
        let err = select(&args(), None).unwrap_err();
        assert!(err.to_string().starts_with("no kubeconfig found"), "{err}");
        let bad = ConnectionArgs { server: Some("not a url".into()), ..args() };
        assert!(select(&bad, None).unwrap_err().to_string().contains("invalid --server"));
    }
}
