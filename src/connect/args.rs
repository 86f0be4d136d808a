//! kubectl's connection flags and the fleet flags, as clap parses them: what a session is
//! opened from. Here rather than in cli.rs so that connect/ takes nothing from the command
//! line's layer; cli.rs re-exports them.

use std::path::PathBuf;

use clap::Args;

/// kubectl's connection flags, with kubectl's names and meaning.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Connection (as in kubectl)")]
pub struct ConnectionArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, merged, else ~/.kube/config)
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// The kubeconfig cluster to use
    #[arg(long, global = true, value_name = "NAME")]
    pub cluster: Option<String>,
    /// The kubeconfig user to use
    #[arg(long, global = true, value_name = "NAME")]
    pub user: Option<String>,
    /// Namespace (default: the context's namespace, else "default")
    #[arg(short = 'n', long, global = true, value_name = "NS")]
    pub namespace: Option<String>,
    /// Look in all namespaces
    #[arg(short = 'A', long, global = true)]
    pub all_namespaces: bool,
    /// Username to impersonate
    #[arg(long = "as", global = true, value_name = "USER")]
    pub as_user: Option<String>,
    /// Group to impersonate (repeatable)
    #[arg(long = "as-group", global = true, value_name = "GROUP")]
    pub as_group: Vec<String>,
    /// UID to impersonate
    #[arg(long = "as-uid", global = true, value_name = "UID")]
    pub as_uid: Option<String>,
    /// The address and port of the Kubernetes API server
    #[arg(short = 's', long, global = true, value_name = "URL")]
    pub server: Option<String>,
    /// Bearer token for authentication to the API server
    #[arg(long, global = true, value_name = "TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Path to a CA certificate file for the server
    #[arg(long, global = true, value_name = "PATH")]
    pub certificate_authority: Option<PathBuf>,
    /// Do not check the server's certificate (insecure)
    #[arg(long, global = true)]
    pub insecure_skip_tls_verify: bool,
    /// How long to wait for one server request: 0 (none), 30s, 1m, 1h30m, or plain seconds
    #[arg(long, global = true, value_name = "DURATION", default_value = "0",
          value_parser = crate::connect::duration::limit_arg("--request-timeout"))]
    pub request_timeout: std::time::Duration,
}

/// Several clusters at once: check, leases, owners --all, overlaps, the fields census and version.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Fleets")]
pub struct FleetArgs {
    /// Run in these kubeconfig contexts: NAME,NAME... or /REGEX/ (a CONTEXT column is added)
    #[arg(long, global = true, value_name = "NAMES|/REGEX/", conflicts_with_all = ["context", "cluster", "server"])]
    pub contexts: Option<String>,
    /// Run in every kubeconfig context
    #[arg(long, global = true, conflicts_with_all = ["contexts", "context", "cluster", "server"])]
    pub all_contexts: bool,
    /// Contexts read at once
    #[arg(long, global = true, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_parallel: u16,
}

impl FleetArgs {
    pub fn active(&self) -> bool {
        self.contexts.is_some() || self.all_contexts
    }
}
