//! Reports checked against the JSON Schemas published in docs/schema/, with a real
//! validator (the jsonschema crate), formats included.

use serde_json::Value;

/// Fails naming every place `report` breaks the published schema of its kind.
#[track_caller]
pub fn conforms(report: &Value) {
    let errors = violations(report);
    let kind = report["kind"].as_str().unwrap_or_default();
    assert!(errors.is_empty(), "{kind} breaks docs/schema/{kind}.json:\n{}", errors.join("\n"));
}

/// Every place `report` breaks the published schema of its kind.
#[track_caller]
pub fn violations(report: &Value) -> Vec<String> {
    let kind = report["kind"].as_str().unwrap_or_else(|| panic!("a report without kind: {report:#}"));
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("docs/schema/{kind}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("no schema for {kind} ({e})"));
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap_or_else(|e| panic!("{}: not a valid schema: {e}", path.display()));
    validator.iter_errors(report).map(|e| format!("{}: {e}", e.instance_path())).collect()
}
