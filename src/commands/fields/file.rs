//! `fields -f FILE`: objects from a file or stdin, for managedFields pasted from a bug
//! report. No cluster is contacted.

use std::io::Read as _;
use std::path::Path;

use anyhow::Result;
use jiff::Timestamp;
use serde_json::Value;

use super::Read;
use crate::error::usage;

/// Every object in the file: one JSON or YAML document, several YAML documents, or a
/// `kind: List` (what `kubectl get -o yaml` prints for several objects).
pub(super) fn read(file: &Path) -> Result<Vec<Read>> {
    let shown = file.display();
    let text = if file == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|e| usage(format!("cannot read stdin: {e}")))?;
        text
    } else {
        std::fs::read_to_string(file).map_err(|e| usage(format!("cannot read {shown}: {e}")))?
    };
    let documents: Vec<Value> = match serde_json::from_str::<Value>(&text) {
        Ok(one) => vec![one],
        Err(_) => serde_saphyr::from_multiple::<Value>(&text).map_err(|e| {
            let first = e.to_string().lines().next().unwrap_or("not YAML").to_string();
            usage(format!("{shown} is neither JSON nor YAML: {first}"))
        })?,
    };
    let mut objects = Vec::new();
    for doc in documents {
        match doc {
            Value::Null => {}
            Value::Object(ref map) if map.get("kind").and_then(Value::as_str).is_some_and(|k| k.ends_with("List")) => {
                let items = map.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
                objects.extend(items);
            }
            other => objects.push(other),
        }
    }
    if objects.is_empty() {
        return Err(usage(format!("{shown} holds no object")));
    }
    let now = Timestamp::now();
    objects
        .into_iter()
        .map(|object| {
            let text = |ptr: &str| object.pointer(ptr).and_then(Value::as_str).map(str::to_string);
            let (Some(kind), Some(name)) = (text("/kind"), text("/metadata/name")) else {
                return Err(usage(format!("{shown}: every object needs kind and metadata.name")));
            };
            Ok(Read {
                namespace: text("/metadata/namespace"),
                kind,
                name,
                now: Some(now),
                metadata_only: false,
                object,
            })
        })
        .collect()
}
