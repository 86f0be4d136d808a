//! `kubectl coord version`: client and server versions, context, server URL and the
//! authenticated user (SelfSubjectReview). The end-to-end proof of the connection path.

use std::collections::BTreeMap;

use anyhow::Result;
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::cli::{ConnectionArgs, FleetArgs};
use crate::commands::fleet::{self, Rendered};
use crate::connect::{Session, Skipped};
use crate::error::Outcome;
use crate::output::table::{Grid, Table};
use crate::output::{Printer, SCHEMA_VERSION, out};

#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Print only the client version; do not contact the server
    #[arg(long)]
    pub client: bool,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionReport {
    pub api_version: &'static str,
    pub kind: &'static str,
    /// The server's clock (the Date header of /version).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_time: Option<jiff::Timestamp>,
    /// False when the authenticated user could not be told (see skipped).
    pub complete: bool,
    pub skipped: Vec<Skipped>,
    pub client: ClientVersion,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerVersion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection: Option<Connection>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientVersion {
    pub version: String,
    /// The git commit it was built from (12 hex digits), "unknown" when built outside git.
    pub git_commit: String,
    /// The Rust target triple it was built for, e.g. x86_64-unknown-linux-gnu.
    pub target: String,
    pub platform: String,
}

/// The fields of /version that the report keeps.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerVersion {
    pub git_version: String,
    #[serde(default)]
    pub platform: String,
    #[serde(default)]
    pub go_version: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    pub context: Option<String>,
    pub server: String,
    pub namespace: String,
    /// Null when the server would not say (SelfSubjectReview forbidden or not served).
    pub user: Option<UserInfo>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInfo {
    #[serde(default)]
    pub username: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(default)]
    pub groups: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

pub async fn run(
    conn_args: &ConnectionArgs,
    fleet: &FleetArgs,
    printer: &Printer,
    args: &VersionArgs,
) -> Result<Outcome> {
    let client = ClientVersion {
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: env!("COORD_GIT_COMMIT").to_string(),
        target: env!("COORD_TARGET").to_string(),
        platform: format!("{}/{}", std::env::consts::OS, go_arch()),
    };
    let report = VersionReport {
        api_version: SCHEMA_VERSION,
        kind: "VersionReport",
        server_time: None,
        complete: true,
        skipped: Vec::new(),
        client,
        server: None,
        connection: None,
    };
    if args.client {
        print_client(printer, &report)?;
        return Ok(Outcome::Clean);
    }
    let in_fleet = fleet.active();
    let client_only = report.clone();
    let result = fleet::run(conn_args, fleet, printer, false, |session| {
        let mut report = report.clone();
        async move {
            let (server, reply) = session.get_json::<ServerVersion>("/version").await?;
            report.server_time = reply.server_time;
            let mut warnings = Vec::new();
            let user = match who_am_i(&session).await {
                Ok(user) => Some(user),
                Err(e) => {
                    warnings.push(format!("cannot tell the authenticated user: {e}"));
                    let reason = if e.forbidden() { "forbidden".to_string() } else { e.short() };
                    report.skipped.push(Skipped::new("selfsubjectreviews.authentication.k8s.io", None, reason));
                    report.complete = false;
                    None
                }
            };
            report.server = Some(server);
            report.connection = Some(Connection {
                context: session.context.clone(),
                server: session.conn.server().to_string(),
                namespace: session.namespace.clone(),
                user,
            });
            let table = if in_fleet {
                fleet_table(&report)
            } else {
                Table {
                    grid: Grid::new(Vec::new()),
                    empty: None,
                    lines: vec![render_text(&report, printer.wide()).trim_end().to_string()],
                }
            };
            let mut rendered = Rendered::new(printer, &report, || table)?;
            rendered.warnings = warnings;
            Ok(rendered)
        }
    })
    .await;
    // As kubectl does: what the client is, whatever became of the server (no kubeconfig, a
    // server that cannot be reached); the error then follows on stderr. Alone only: a fleet
    // already prints a row per context that failed.
    if result.is_err() && !in_fleet {
        print_client(printer, &client_only)?;
    }
    result
}

fn print_client(printer: &Printer, report: &VersionReport) -> Result<()> {
    if printer.is_machine() { printer.machine(report) } else { out(&render_text(report, printer.wide())) }
}

/// One row per context: where it points, what runs there, who we are there.
fn fleet_table(report: &VersionReport) -> Table {
    let mut grid = Grid::new(vec!["SERVER", "VERSION", "NAMESPACE", "USER"]);
    let c = report.connection.as_ref();
    grid.row(vec![
        c.map(|c| c.server.clone()).unwrap_or_default().into(),
        report.server.as_ref().map(|s| s.git_version.clone()).unwrap_or_default().into(),
        c.map(|c| c.namespace.clone()).unwrap_or_default().into(),
        c.and_then(|c| c.user.as_ref()).map(|u| u.username.clone()).unwrap_or_else(|| "(unknown)".into()).into(),
    ]);
    Table::new(grid)
}

async fn who_am_i(session: &Session) -> Result<UserInfo, crate::connect::RequestError> {
    #[derive(Deserialize)]
    struct Review {
        status: Option<ReviewStatus>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct ReviewStatus {
        user_info: Option<UserInfo>,
    }
    let path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let body = serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let reply = session.conn.ask(path, &body).await?;
    let review: Review = crate::connect::decode(&reply, path, session.conn.server())?;
    Ok(review.status.and_then(|s| s.user_info).unwrap_or_default())
}

fn render_text(report: &VersionReport, wide: bool) -> String {
    let client = &report.client;
    let mut lines: Vec<(&str, String)> = vec![
        ("Client Version", client.version.clone()),
        ("Client Commit", client.git_commit.clone()),
        ("Client Target", client.target.clone()),
    ];
    if wide {
        lines.push(("Client Platform", client.platform.clone()));
    }
    if let Some(server) = &report.server {
        lines.push(("Server Version", server.git_version.clone()));
        if wide {
            lines.push(("Server Platform", server.platform.clone()));
            lines.push(("Server Go", server.go_version.clone()));
        }
    }
    if let Some(c) = &report.connection {
        lines.push(("Context", c.context.clone().unwrap_or_else(|| "(none: --server)".into())));
        lines.push(("Server", c.server.clone()));
        lines.push(("Namespace", c.namespace.clone()));
        match &c.user {
            Some(u) => {
                lines.push(("User", u.username.clone()));
                lines.push(("Groups", u.groups.join(", ")));
                if wide && !u.uid.is_empty() {
                    lines.push(("UID", u.uid.clone()));
                }
            }
            None => lines.push(("User", "(unknown)".into())),
        }
    }
    let width = lines.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
    lines.iter().map(|(k, v)| format!("{:<width$} {v}\n", format!("{k}:"), width = width)).collect()
}

/// Architecture names as Go and kubectl spell them.
fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    }
}
