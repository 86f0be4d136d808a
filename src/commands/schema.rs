//! `kubectl coord schema [KIND]`: the JSON Schema of each report kind that `-o json|yaml`
//! prints. The same schemas are published in docs/schema/ (a test keeps them equal), so a
//! script written against coord.kubectl.io/v1alpha1 can validate what it reads.

use anyhow::Result;
use clap::Args;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Value, json};

use crate::cli::OutputFormat;
use crate::commands::{check, fields, fleet, history, leases, overlaps, owners, trace, version};
use crate::error::{Outcome, usage};
use crate::output::{Printer, SCHEMA_VERSION, out};

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// The report kind (LeaseReport, CheckReport, ...); without one, the kinds are listed
    pub kind: Option<String>,
}

/// Every report kind, with the command that prints it.
pub const KINDS: &[(&str, &str)] = &[
    ("CheckReport", "check -o json"),
    ("FieldCensus", "fields -o json (no object)"),
    ("FieldReport", "fields TYPE/NAME -o json, fields -f FILE -o json"),
    ("FleetReport", "any command with --contexts or --all-contexts -o json"),
    ("History", "history TYPE/NAME --audit-log PATH -o json"),
    ("HistoryFindings", "history --findings --audit-log PATH -o json"),
    ("LeaseReport", "leases -o json"),
    ("OverlapReport", "overlaps -o json"),
    ("OwnerGraph", "owners TYPE/NAME -o json"),
    ("OwnerScan", "owners --all -o json"),
    ("Trace", "trace TYPE/NAME -o json"),
    ("TraceSummary", "trace TYPE/NAME --watch -o json (the last document)"),
    ("VersionReport", "version -o json"),
];

/// The JSON Schema of one report kind, with apiVersion and kind pinned to their values.
pub fn schema(kind: &str) -> Option<Value> {
    // Schemas of what is written: a field skipped when empty is optional, not required.
    let mut generator = SchemaGenerator::new(SchemaSettings::draft2020_12().for_serialize());
    let root: Schema = match kind {
        "CheckReport" => check::render::CheckReport::json_schema(&mut generator),
        "FieldCensus" => fields::render::CensusReport::json_schema(&mut generator),
        "FieldReport" => fields::render::FieldReport::json_schema(&mut generator),
        "FleetReport" => fleet::FleetReport::json_schema(&mut generator),
        "History" => history::render::History::json_schema(&mut generator),
        "HistoryFindings" => history::render::HistoryFindings::json_schema(&mut generator),
        "LeaseReport" => leases::LeaseReport::json_schema(&mut generator),
        "OverlapReport" => overlaps::render::OverlapReport::json_schema(&mut generator),
        "OwnerGraph" => owners::render::TreeReport::json_schema(&mut generator),
        "OwnerScan" => owners::render::ScanReport::json_schema(&mut generator),
        "Trace" => trace::render::TraceWire::json_schema(&mut generator),
        "TraceSummary" => trace::live::Summary::json_schema(&mut generator),
        "VersionReport" => version::VersionReport::json_schema(&mut generator),
        _ => return None,
    };
    let mut root = root.to_value();
    let object = root.as_object_mut()?;
    object.insert("$schema".into(), json!("https://json-schema.org/draft/2020-12/schema"));
    object.insert("$id".into(), json!(format!("https://coord.kubectl.io/schema/v1alpha1/{kind}.json")));
    object.insert("title".into(), json!(kind));
    if let Some(Value::Object(props)) = object.get_mut("properties") {
        props.insert("apiVersion".into(), json!({"const": SCHEMA_VERSION}));
        props.insert("kind".into(), json!({"const": kind}));
    }
    let defs = generator.take_definitions(true);
    if !defs.is_empty() {
        object.insert("$defs".into(), Value::Object(defs.into_iter().collect()));
    }
    Some(root)
}

pub fn run(printer: &Printer, args: &SchemaArgs) -> Result<Outcome> {
    let Some(kind) = &args.kind else {
        let width = KINDS.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        let lines: String = KINDS.iter().map(|(k, by)| format!("{k:width$}   {by}\n")).collect();
        out(&lines)?;
        return Ok(Outcome::Clean);
    };
    let found = KINDS.iter().find(|(k, _)| k.eq_ignore_ascii_case(kind)).and_then(|(k, _)| schema(k));
    let Some(schema) = found else {
        let known: Vec<&str> = KINDS.iter().map(|(k, _)| *k).collect();
        return Err(usage(format!("no report kind {kind:?}; one of {}", known.join(", "))));
    };
    match printer.format {
        OutputFormat::Yaml => printer.machine(&schema)?,
        _ => out(&(serde_json::to_string_pretty(&schema)? + "\n"))?,
    }
    Ok(Outcome::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/schema/ is what users read and validate against: it must be what the code
    /// prints. COORD_BLESS_SCHEMAS=1 rewrites it after a deliberate change.
    #[test]
    fn published_schemas_are_the_codes() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema");
        let bless = std::env::var_os("COORD_BLESS_SCHEMAS").is_some();
        for (kind, _) in KINDS {
            let text =
                serde_json::to_string_pretty(&schema(kind).expect("every listed kind has a schema")).unwrap() + "\n";
            let path = dir.join(format!("{kind}.json"));
            if bless {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &text).unwrap();
            }
            let published = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                published == text,
                "{} differs from the code's schema for {kind}: a wire change must be deliberate \
                 (rerun with COORD_BLESS_SCHEMAS=1 and review the diff)",
                path.display()
            );
        }
        let files = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(files, KINDS.len(), "docs/schema holds a schema no command prints");
    }

    #[test]
    fn kinds_and_envelope_are_pinned() {
        let s = schema("LeaseReport").unwrap();
        assert_eq!(s["properties"]["kind"]["const"], "LeaseReport");
        assert_eq!(s["properties"]["apiVersion"]["const"], SCHEMA_VERSION);
        let required: Vec<&str> = s["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        for field in ["apiVersion", "kind", "complete", "skipped", "leases"] {
            assert!(required.contains(&field), "{field} not required: {required:?}");
        }
        assert!(schema("Nope").is_none());
    }
}
