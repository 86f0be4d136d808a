//! Manifests from files, as `kubectl apply -f` takes them: a file, a directory (its .json,
//! .yaml and .yml files; -R: and its subdirectories'), - for stdin; YAML with several
//! documents, JSON (one value or several), `kind: List` and other `*List` kinds. Every object
//! keeps where it came from (file and document) so that findings can name it. A document that
//! is not a Kubernetes object, or not YAML or JSON at all, is skipped with one line saying where.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Where an object came from: the file as given (or found under a directory given) and the
/// document's number in it, from 1 (`---` separates YAML documents; a JSON file's values
/// count the same way); a List's items share their List's document.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Origin {
    pub file: String,
    pub document: usize,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}", self.file, self.document)
    }
}

/// One object from the files.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub origin: Origin,
    pub api_version: String,
    pub kind: String,
    /// As the document says; None takes -n's (or the context's) namespace for namespaced kinds.
    pub namespace: Option<String>,
    pub name: String,
    pub object: Value,
}

impl Manifest {
    /// The API group: "" for the core group ("v1"), "apps" for "apps/v1".
    pub fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
    }
}

#[derive(Debug, Default)]
pub struct Manifests {
    pub objects: Vec<Manifest>,
    /// One line per document or file that could not be read, saying where and why.
    pub skipped: Vec<String>,
}

/// Why nothing could be read (exit 2).
#[derive(Debug)]
pub struct NothingRead(pub String);

impl std::fmt::Display for NothingRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NothingRead {}

/// The extensions kubectl reads in a directory.
const EXTENSIONS: &[&str] = &["json", "yaml", "yml"];

/// Every object in `paths`. Errors only when no object at all could be read.
pub fn read(paths: &[PathBuf], recursive: bool) -> Result<Manifests, NothingRead> {
    let mut out = Manifests::default();
    for path in paths {
        let shown = path.display().to_string();
        if path == Path::new("-") {
            let mut text = String::new();
            match std::io::stdin().read_to_string(&mut text) {
                Ok(_) => parse_into(&mut out, "stdin", &text),
                Err(e) => out.skipped.push(format!("-: cannot read stdin: {e}")),
            }
        } else if shown.starts_with("http://") || shown.starts_with("https://") {
            out.skipped.push(format!("{shown}: URLs are not read (no request leaves for anywhere but the cluster): download it and pass the file"));
        } else if path.is_dir() {
            let mut files = Vec::new();
            let mut foreign = 0;
            walk(path, recursive, &mut files, &mut foreign, &mut out.skipped);
            if foreign > 0 {
                out.skipped.push(format!(
                    "{shown}: {foreign} file{} not .json, .yaml or .yml left out",
                    if foreign == 1 { "" } else { "s" }
                ));
            }
            for file in files {
                read_file(&mut out, &file);
            }
        } else {
            read_file(&mut out, path);
        }
    }
    if out.objects.is_empty() {
        let why = match out.skipped.first() {
            Some(first) => format!("no Kubernetes object could be read from the files: {first}"),
            None => "no Kubernetes object in the files".to_string(),
        };
        return Err(NothingRead(why));
    }
    Ok(out)
}

fn walk(dir: &Path, recursive: bool, files: &mut Vec<PathBuf>, foreign: &mut usize, skipped: &mut Vec<String>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            skipped.push(format!("{}: cannot read the directory: {e}", dir.display()));
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            if recursive {
                walk(&path, recursive, files, foreign, skipped);
            }
        } else if path.extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.contains(&e)) {
            files.push(path);
        } else {
            *foreign += 1;
        }
    }
}

fn read_file(out: &mut Manifests, path: &Path) {
    let shown = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => parse_into(out, &shown, &text),
            Err(_) => out.skipped.push(format!("{shown}: not text (not UTF-8)")),
        },
        Err(e) => out.skipped.push(format!("{shown}: cannot read: {e}")),
    }
}

/// The objects of one file's text, each document on its own: a bad one is skipped, the rest
/// kept.
pub fn parse_into(out: &mut Manifests, file: &str, text: &str) {
    for (document, parsed) in documents(text).into_iter().enumerate() {
        let origin = Origin { file: file.to_string(), document: document + 1 };
        match parsed {
            Ok(Value::Null) => {}
            Ok(value) => take(out, origin, value),
            Err(why) => out.skipped.push(format!("{origin}: {why}")),
        }
    }
}

/// The documents of a text: JSON values one after the other, else YAML documents split at
/// `---` lines (as kubectl splits them), each parsed alone.
fn documents(text: &str) -> Vec<Result<Value, String>> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let values: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(trimmed).into_iter::<Value>().collect();
        if let Ok(values) = values {
            return values.into_iter().map(Ok).collect();
        }
        // Not JSON after all (YAML flow style starts the same way): read it as YAML.
    }
    split_yaml(text)
        .into_iter()
        .map(|doc| {
            serde_saphyr::from_str::<Value>(doc).map_err(|e| {
                let first = e.to_string().lines().next().unwrap_or("").to_string();
                format!("not YAML or JSON: {first}")
            })
        })
        .collect()
}

/// A YAML stream's documents: split at lines that are `---` (or start with `--- `), empty
/// documents included so that numbers count separators as a person does.
fn split_yaml(text: &str) -> Vec<&str> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare == "---" || bare.starts_with("--- ") {
            if at > 0 || !text[start..at].trim().is_empty() {
                docs.push(&text[start..at]);
            }
            start = at + line.len();
        }
        at += line.len();
    }
    if !text[start..].trim().is_empty() || docs.is_empty() {
        docs.push(&text[start..]);
    }
    docs
}

/// One document's objects: itself, or a List's items.
fn take(out: &mut Manifests, origin: Origin, value: Value) {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
    if kind.ends_with("List") && value.get("items").is_some() {
        match value.get("items").and_then(Value::as_array) {
            Some(items) => {
                for item in items {
                    take(out, origin.clone(), item.clone());
                }
            }
            None => out.skipped.push(format!("{origin}: a {kind} whose items are not a list")),
        }
        return;
    }
    let text = |ptr: &str| value.pointer(ptr).and_then(Value::as_str).map(str::to_string);
    let (Some(api_version), Some(kind)) = (text("/apiVersion"), text("/kind")) else {
        out.skipped.push(format!("{origin}: not a Kubernetes object (no apiVersion and kind)"));
        return;
    };
    let Some(name) = text("/metadata/name").filter(|n| !n.is_empty()) else {
        let why = if text("/metadata/generateName").is_some() {
            "a generated name is only known once created"
        } else {
            "no metadata.name"
        };
        out.skipped.push(format!("{origin}: {kind} left out: {why}"));
        return;
    };
    out.objects.push(Manifest {
        namespace: text("/metadata/namespace").filter(|n| !n.is_empty()),
        origin,
        api_version,
        kind,
        name,
        object: value,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Manifests {
        let mut out = Manifests::default();
        parse_into(&mut out, "f.yaml", text);
        out
    }

    #[test]
    fn yaml_documents_lists_and_json_keep_their_place() {
        let text = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
---
# only a comment
---
apiVersion: v1
kind: List
items:
- {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: a}}
- {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: b}}
--- 
not: [a kubernetes object
";
        let out = parse(text);
        let seen: Vec<(String, usize, &str)> =
            out.objects.iter().map(|m| (m.kind.clone(), m.origin.document, m.name.as_str())).collect();
        assert_eq!(
            seen,
            [
                ("Deployment".to_string(), 1, "web"),
                ("PodDisruptionBudget".to_string(), 3, "a"),
                ("PodDisruptionBudget".to_string(), 3, "b"),
            ]
        );
        assert_eq!(out.objects[0].namespace.as_deref(), Some("shop"));
        assert_eq!(out.objects[0].group(), "apps");
        assert_eq!(out.objects[1].namespace, None);
        assert_eq!(out.skipped.len(), 1, "{:?}", out.skipped);
        assert!(out.skipped[0].starts_with("f.yaml#4: not YAML or JSON"), "{:?}", out.skipped);

        let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}} {"kind":"Other"}"#;
        let out = parse(json);
        assert_eq!(out.objects.len(), 1);
        assert_eq!(out.objects[0].group(), "");
        assert_eq!(out.skipped, ["f.yaml#2: not a Kubernetes object (no apiVersion and kind)"]);
    }

    #[test]
    fn generated_names_and_empty_files() {
        let out = parse("apiVersion: v1\nkind: Pod\nmetadata: {generateName: p-}\n");
        assert!(out.objects.is_empty());
        assert_eq!(out.skipped, ["f.yaml#1: Pod left out: a generated name is only known once created"]);
        assert!(parse("").objects.is_empty() && parse("").skipped.is_empty());
        assert!(parse("---\n---\n").skipped.is_empty());
    }

    #[test]
    fn directories_and_nothing_readable() {
        let dir = std::env::temp_dir().join(format!("coord-files-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n").unwrap();
        std::fs::write(dir.join("notes.txt"), "hello").unwrap();
        std::fs::write(dir.join("sub/b.json"), r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}"#)
            .unwrap();
        let flat = read(std::slice::from_ref(&dir), false).unwrap();
        assert_eq!(flat.objects.len(), 1);
        assert!(flat.skipped[0].ends_with("1 file not .json, .yaml or .yml left out"), "{:?}", flat.skipped);
        let deep = read(std::slice::from_ref(&dir), true).unwrap();
        assert_eq!(deep.objects.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        let bad = dir.join("bad.yaml");
        std::fs::write(&bad, "kind: [").unwrap();
        let err = read(&[bad, dir.join("missing.yaml")], false).unwrap_err();
        assert!(err.0.starts_with("no Kubernetes object could be read from the files: "), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    proptest::proptest! {
        /// Whatever a file holds, reading it ends: objects or one line per bad document.
        #[test]
        fn any_text_is_read_or_skipped(text in "(apiVersion: v1\n|kind: Pod\n|metadata: \\{name: [a-z]\\}\n|---\n|[ -~]{0,12}\n){0,12}") {
            let out = parse(&text);
            for m in &out.objects {
                proptest::prop_assert!(!m.name.is_empty() && !m.kind.is_empty());
            }
        }

        #[test]
        fn any_bytes_are_read_or_skipped(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = parse(&text);
        }
    }
}
