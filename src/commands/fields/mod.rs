//! `kubectl coord fields TYPE/NAME`: which manager owns which field, and where they contend.

mod blame;
pub(crate) mod census;
mod file;
pub(crate) mod render;
mod watch;

use crate::output::table::fit_lines;
use anyhow::{Result, anyhow};
use clap::Args;
use jiff::Timestamp;
use serde::Deserialize;
use serde_json::Value;

use crate::analyze::blame::blame;
use crate::analyze::fields::{self, Contest, ContestKind, Entry, contests, ownership, path_within};
use crate::analyze::fieldsv1::{DecodeError, Decoded, decode};
use crate::analyze::resource_ref::parse_args;
use crate::cli::OutputFormat;
use crate::cli::{ConnectionArgs, FleetArgs};
use crate::commands::fleet::{self, Rendered};
use crate::connect::{Session, discovery};
use crate::error::{Outcome, usage};
use crate::output::{Printer, SCHEMA_VERSION, out};

pub use blame::BlameTime;
use render::{CensusReport, FieldReport, FieldRow, ObjectFields, Owner};

#[derive(Debug, Args)]
pub struct FieldsArgs {
    /// The object: TYPE/NAME (deploy/web, deployments.apps/web) or TYPE NAME. Without one,
    /// a census of every object of the common workload kinds in the namespace (-A: all)
    pub object: Vec<String>,
    /// With no object: also scan these types (e.g. configmaps,widgets.example.com)
    #[arg(long, value_delimiter = ',', value_name = "TYPES")]
    pub kinds: Vec<String>,
    /// One line per managedFields entry instead of per field
    #[arg(long)]
    pub by_manager: bool,
    /// Only fields owned by this manager
    #[arg(long, value_name = "NAME")]
    pub manager: Option<String>,
    /// Only fields under this path (e.g. .spec.template)
    #[arg(long, value_name = "PREFIX")]
    pub path: Option<String>,
    /// Exit 3 on apply-and-update, update-and-update or update-inside-apply contests between writers (with --watch: when a fight was seen); exit 4 when there is none but something in scope could not be read
    #[arg(long)]
    pub exit_code: bool,
    /// Stay on a watch of one object: a line each time a field's owners change, and the
    /// fields whose owner flipped back and forth at the end
    #[arg(long)]
    pub watch: bool,
    /// Read the object from a file instead of the cluster (YAML or JSON with managedFields,
    /// as `kubectl get -o yaml --show-managed-fields` prints it; several documents or a List
    /// give several objects; - reads stdin)
    #[arg(short = 'f', long = "filename", value_name = "FILE", conflicts_with_all = ["object", "kinds", "watch"])]
    pub filename: Option<std::path::PathBuf>,
    /// With -o blame: when each owner last wrote, as an age (relative), a timestamp (full) or not at all (none)
    #[arg(long, value_enum, value_name = "WHEN")]
    pub time: Option<BlameTime>,
    /// End --watch after this long (30s, 5m, ...); default or 0: until Ctrl-C
    #[arg(long, value_name = "DURATION", requires = "watch", value_parser = crate::connect::duration::limit_arg("--watch-timeout"))]
    pub watch_timeout: Option<std::time::Duration>,
}

/// One managedFields entry as the server sends it, its FieldsV1 trie decoded while the
/// object (or the list page it came in) is read.
type ManagedEntry = fields::ManagedEntry<Decoded>;

impl fields::ManagedEntry<Decoded> {
    /// The entry, with no paths when its trie could not be decoded (and why).
    fn into_entry(self) -> (Entry, Option<DecodeError>) {
        let (paths, problem) = match self.fields_v1.map(|d| d.0).unwrap_or_else(|| decode(&Value::Null)) {
            Ok(paths) => (paths, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        let entry = Entry {
            manager: self.manager,
            operation: self.operation,
            subresource: self.subresource,
            api_version: self.api_version,
            time: self.time,
            paths,
        };
        (entry, problem)
    }
}

/// One object as read, from the cluster or from a file.
struct Read {
    kind: String,
    namespace: Option<String>,
    name: String,
    object: Value,
    /// The clock ages are measured against: the server's, or this machine's for a file.
    now: Option<Timestamp>,
    /// Read metadata-only (Secrets, ConfigMaps): owned data fields are not in the object.
    metadata_only: bool,
}

pub async fn run(conn: &ConnectionArgs, fleet: &FleetArgs, printer: &Printer, args: &FieldsArgs) -> Result<Outcome> {
    let blame_view = printer.format == OutputFormat::Blame;
    if args.time.is_some() && !blame_view {
        return Err(usage("--time is for -o blame"));
    }
    if blame_view && args.by_manager {
        return Err(usage("-o blame shows fields line by line; --by-manager is for the table"));
    }
    if let Some(file) = &args.filename {
        let objects = file::read(file)?;
        return show(printer, args, objects, None);
    }
    if args.object.is_empty() {
        if blame_view {
            return Err(usage("-o blame needs an object (TYPE/NAME or -f FILE)"));
        }
        return run_census(conn, fleet, printer, args).await;
    }
    let targets = parse_args(&args.object).map_err(usage)?;
    let watch_timeout = args.watch_timeout.filter(|d| !d.is_zero());
    if args.watch && (targets.len() != 1 || args.by_manager || blame_view) {
        return Err(usage(
            "--watch follows exactly one object, one line per field change (no --by-manager or -o blame)",
        ));
    }
    let session = Session::open(conn).await?;
    let resources = discovery::discover(&session.conn).await?;
    // Targets first: a command that fails says so in one line, without the warning.
    for t in &targets {
        resources.resolve(&t.type_name)?;
    }
    for w in resources.warnings() {
        printer.warn(&w);
    }
    if args.watch {
        let resource = resources.resolve(&targets[0].type_name)?;
        return watch::run(&session, printer, resource, &targets[0].name, args, watch_timeout).await;
    }
    let mut objects = Vec::new();
    let mut server_time = None;
    for t in &targets {
        let resource = resources.resolve(&t.type_name)?;
        let ns = resource.namespaced.then_some(session.namespace.as_str());
        let path = format!("{}/{}", resource.collection(ns), t.name);
        let (object, reply) = match session.get_json::<Value>(&path).await {
            Ok(found) => found,
            Err(e) if e.not_found() => {
                if ns.is_some() {
                    session.check_namespace().await?;
                }
                let place = ns.map(|n| format!(" in namespace {n:?}")).unwrap_or_default();
                return Err(anyhow!("{} {:?} not found{place}", resource.plural, t.name));
            }
            Err(e) => return Err(e.into()),
        };
        server_time = server_time.or(reply.server_time);
        objects.push(Read {
            kind: resource.kind.clone(),
            namespace: ns.map(str::to_string),
            name: t.name.clone(),
            object,
            now: reply.server_time,
            metadata_only: crate::connect::request::METADATA_ONLY_RESOURCES.contains(&resource.plural.as_str())
                && resource.group.is_empty(),
        });
    }
    show(printer, args, objects, server_time)
}

/// Renders objects read from the cluster (`server_time` its clock) or from a file (None).
fn show(printer: &Printer, args: &FieldsArgs, objects: Vec<Read>, server_time: Option<Timestamp>) -> Result<Outcome> {
    if printer.format == OutputFormat::Blame {
        let filter = blame::Filter { manager: args.manager.as_deref(), path: args.path.as_deref() };
        let mut docs = Vec::new();
        let mut contested = false;
        for read in &objects {
            let (entries, undecodable) = entries_of(&read.object);
            warn_about(printer, read, &entries, &undecodable);
            contested |= contests(&entries).iter().any(is_fight);
            let lines = blame(&read.object, &entries);
            docs.push(blame::render(&lines, &entries, read.now, args.time.unwrap_or_default(), &filter, printer.color));
        }
        out(&docs.join("---\n"))?;
        return Ok(if args.exit_code && contested { Outcome::Findings } else { Outcome::Clean });
    }
    let objects: Vec<ObjectFields> = objects
        .iter()
        .map(|r| {
            let analyzed = analyze_object(&r.kind, r.namespace.as_deref(), &r.name, &r.object, r.now, args);
            if printer.is_machine() {
                // The report carries the server's clock only: a file's ages were measured here.
                return ObjectFields { server_time: server_time.and(r.now), ..analyzed };
            }
            analyzed
        })
        .collect();
    let contested = objects.iter().flat_map(|o| &o.contests).any(is_fight);
    if printer.is_machine() {
        printer.machine(&FieldReport {
            api_version: SCHEMA_VERSION,
            kind: "FieldReport",
            server_time,
            complete: true,
            skipped: Vec::new(),
            objects,
        })?;
    } else {
        let text: Vec<String> = objects.iter().map(|o| render::table(o, printer, args.by_manager)).collect();
        out(&fit_lines(&text.join("\n"), printer.width))?;
        for o in &objects {
            for u in &o.undecodable {
                printer.warn(&format!("{}/{}: {u}", o.kind, o.name));
            }
        }
    }
    Ok(if args.exit_code && contested { Outcome::Findings } else { Outcome::Clean })
}

/// What the blame view cannot show: undecodable entries, no managedFields at all (kubectl
/// hides them unless --show-managed-fields), data fields of an object read metadata-only.
fn warn_about(printer: &Printer, read: &Read, entries: &[Entry], undecodable: &[String]) {
    let name = format!("{}/{}", read.kind.to_lowercase(), read.name);
    for u in undecodable {
        printer.warn(&format!("{name}: {u}"));
    }
    if entries.is_empty() {
        printer.warn(&format!(
            "{name} has no managedFields: no field shows an owner (kubectl get prints them with --show-managed-fields)"
        ));
    }
    if read.metadata_only {
        printer.warn(&format!(
            "{name}: read metadata-only (Secrets and ConfigMaps always are), so only metadata is shown; \
             `kubectl coord fields {name}` lists the owners of its data fields"
        ));
    }
}

/// The contests `--exit-code` counts: Apply against Update, or Update against Update.
fn is_fight(c: &Contest) -> bool {
    matches!(c.kind, ContestKind::ApplyAndUpdate | ContestKind::UpdateAndUpdate | ContestKind::UpdateInsideApply)
}

async fn run_census(conn: &ConnectionArgs, fleet: &FleetArgs, printer: &Printer, args: &FieldsArgs) -> Result<Outcome> {
    if args.by_manager || args.manager.is_some() || args.path.is_some() || args.watch {
        return Err(usage("--by-manager, --manager, --path and --watch need an object (TYPE/NAME)"));
    }
    fleet::run(conn, fleet, printer, args.exit_code, |session| async move {
        let census = session.checking_namespace(census::collect(&session, &args.kinds)).await?;
        let report = CensusReport { api_version: SCHEMA_VERSION, kind: "FieldCensus", census: &census };
        let mut rendered = Rendered::new(printer, &report, || census::table(&census, printer))?;
        rendered.warnings = census
            .skipped
            .iter()
            .map(|note| format!("not listed: {note}; the census may be incomplete"))
            .chain(census.undecodable.iter().map(|note| format!("managedFields not understood: {note}")))
            .collect();
        rendered.findings = census.contested.iter().flat_map(|o| &o.contests).any(is_fight);
        rendered.incomplete = !census.skipped.is_empty();
        Ok(rendered)
    })
    .await
}

/// The object's managedFields entries, decoded, and a line for each that could not be.
pub(crate) fn entries_of(object: &Value) -> (Vec<Entry>, Vec<String>) {
    let raw: Vec<ManagedEntry> = object
        .pointer("/metadata/managedFields")
        .and_then(|v| Vec::<ManagedEntry>::deserialize(v).ok())
        .unwrap_or_default();
    let mut undecodable = Vec::new();
    let entries = raw
        .into_iter()
        .map(|r| {
            let (entry, problem) = r.into_entry();
            if let Some(e) = problem {
                undecodable.push(format!("manager {}: {e}", entry.manager));
            }
            entry
        })
        .collect();
    (entries, undecodable)
}

fn analyze_object(
    kind: &str,
    ns: Option<&str>,
    name: &str,
    object: &Value,
    now: Option<Timestamp>,
    args: &FieldsArgs,
) -> ObjectFields {
    let (entries, undecodable) = entries_of(object);
    let keep_manager = |e: &Entry| args.manager.as_ref().is_none_or(|m| &e.manager == m);
    let keep_path = |p: &str| args.path.as_ref().is_none_or(|prefix| path_within(p, prefix));
    let mut fields = Vec::new();
    for (path, ids) in ownership(&entries) {
        let text = path.to_string();
        if !keep_path(&text) || !ids.iter().any(|&i| keep_manager(&entries[i])) {
            continue;
        }
        let owners = ids
            .iter()
            .map(|&i| {
                let e = &entries[i];
                Owner {
                    manager: e.manager.clone(),
                    operation: e.operation.clone(),
                    subresource: e.subresource.clone(),
                    time: e.time,
                }
            })
            .collect();
        fields.push(FieldRow { value: path.lookup(object).cloned(), path: text, owners });
    }
    let all_contests = contests(&entries);
    let contests = all_contests.into_iter().filter(|c| keep_path(&c.path)).collect();
    ObjectFields {
        kind: kind.to_string(),
        namespace: ns.map(str::to_string),
        name: name.to_string(),
        server_time: now,
        managers: entries.into_iter().filter(|e| keep_manager(e)).collect(),
        fields,
        contests,
        undecodable,
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use serde_json::json;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: FieldsArgs,
    }

    /// A Deployment applied by a GitOps tool, scaled by kubectl through the scale
    /// subresource, its status written by kube-controller-manager: the spec.replicas fight.
    fn deployment() -> Value {
        let entry = |manager: &str, operation: &str, subresource: &str, fields: Value| {
            let mut e = json!({"manager": manager, "operation": operation, "apiVersion": "apps/v1",
                "time": "2026-12-05T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields});
            if !subresource.is_empty() {
                e["subresource"] = json!(subresource);
            }
            e
        };
        let container = r#"k:{"name":"storefront-application-server"}"#;
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "storefront", "namespace": "coord-demo", "managedFields": [
                entry("gitops", "Apply", "", json!({"f:metadata": {"f:labels": {"f:app.kubernetes.io/name": {}}},
                    "f:spec": {"f:selector": {}, "f:template": {"f:spec": {"f:containers": {container: {
                        ".": {}, "f:image": {}, "f:name": {}}}}}}})),
                entry("kubectl", "Update", "scale", json!({"f:spec": {"f:replicas": {}}})),
                entry("kube-controller-manager", "Update", "status",
                    json!({"f:status": {"f:availableReplicas": {}, "f:conditions": {}, "f:observedGeneration": {}}})),
            ]},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "storefront-application-server",
                "image": "registry.example.com/shop/storefront-application-server:2026.12.05-rc1"}]}}},
            "status": {"availableReplicas": 3, "observedGeneration": 4}
        })
    }

    #[test]
    fn fits_80_and_120_columns_by_field_and_by_manager() {
        let now = Some(Timestamp::from_second(1_796_467_200).unwrap());
        for by_manager in [false, true] {
            let mut argv = vec!["fields", "deploy/storefront"];
            if by_manager {
                argv.push("--by-manager");
            }
            let args = Cli::parse_from(argv).args;
            let o = analyze_object("Deployment", Some("coord-demo"), "storefront", &deployment(), now, &args);
            assert!(!o.contests.is_empty(), "the scale subresource inside gitops' apply is a contest");
            for (width, text) in crate::output::screens(|p| fit_lines(&render::table(&o, p, by_manager), p.width)) {
                assert!(text.contains(".spec.replicas update-inside-apply") || by_manager, "{text}");
                let view = if by_manager { "by_manager" } else { "by_field" };
                insta::assert_snapshot!(format!("fields_{view}_{width}"), text);
            }
        }
    }
}
