//! The blame view: the object as YAML, each line joined with the managedFields entries
//! that own exactly that field. Pure: entries come decoded from [`super::fieldsv1`].
//!
//! Ownership is never inherited from neighbours or parents: a field no entry names (a
//! server default such as `imagePullPolicy`, or a field whose owner left) has no owners.
//! A list item's first line (`- name: web`) carries the item's own owners (its `.` in
//! FieldsV1) besides those of the field on that line.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fields::Entry;
use super::fieldsv1::{Element, FieldPath};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The YAML text of the line, indentation included.
    pub text: String,
    /// The field the line shows (a list item's first line: the field on that line).
    pub path: FieldPath,
    /// Indices into the entries, in entry order, each once.
    pub owners: Vec<usize>,
}

/// The object (without `metadata.managedFields`) as YAML lines with their owners.
pub fn blame(object: &Value, entries: &[Entry]) -> Vec<Line> {
    let mut trie = Trie::default();
    for (i, e) in entries.iter().enumerate() {
        for p in &e.paths {
            trie.insert(&p.0, i);
        }
    }
    let mut emitter = Emitter { path: Vec::new(), lines: Vec::new() };
    let at = At { node: Some(&trie), inherited: &[] };
    match object {
        Value::Object(map) => emitter.map(map, 0, at, true),
        other => emitter.push(scalar(other), at.owners()),
    }
    emitter.lines
}

#[derive(Default)]
struct Trie {
    owners: Vec<usize>,
    /// Entries that own something strictly below this node.
    below: Vec<usize>,
    fields: BTreeMap<String, Trie>,
    items: Vec<(Item, Trie)>,
}

/// A list item as FieldsV1 names it, with its JSON already parsed for matching.
enum Item {
    Key(Vec<(String, Value)>),
    Value(Value),
    Index(u64),
}

impl Trie {
    fn insert(&mut self, path: &[Element], owner: usize) {
        let Some((first, rest)) = path.split_first() else {
            add_unique(&mut self.owners, [owner]);
            return;
        };
        add_unique(&mut self.below, [owner]);
        let child = match first {
            Element::Field(name) => self.fields.entry(name.to_string()).or_default(),
            Element::Key(keys) => self.item_child(Item::Key(keys.iter().map(|(k, v)| (k.clone(), parse(v))).collect())),
            Element::Value(json) => self.item_child(Item::Value(parse(json))),
            Element::Index(i) => self.item_child(Item::Index(*i)),
        };
        child.insert(rest, owner);
    }

    fn item_child(&mut self, item: Item) -> &mut Trie {
        let at = match self.items.iter().position(|(have, _)| same_item(have, &item)) {
            Some(at) => at,
            None => {
                self.items.push((item, Trie::default()));
                self.items.len() - 1
            }
        };
        &mut self.items[at].1
    }

    /// The node for list item `value` at `index`, and the path element that names it.
    fn item(&self, value: &Value, index: usize) -> Option<(Element, &Trie)> {
        self.items.iter().find_map(|(item, node)| {
            let element = match item {
                Item::Key(keys) if keys.iter().all(|(k, v)| value.get(k) == Some(v)) => {
                    Element::Key(keys.iter().map(|(k, v)| (k.clone(), v.to_string())).collect())
                }
                Item::Value(v) if v == value => Element::Value(v.to_string()),
                Item::Index(i) if usize::try_from(*i).is_ok_and(|i| i == index) => Element::Index(*i),
                _ => return None,
            };
            Some((element, node))
        })
    }
}

fn same_item(a: &Item, b: &Item) -> bool {
    match (a, b) {
        (Item::Key(x), Item::Key(y)) => x == y,
        (Item::Value(x), Item::Value(y)) => x == y,
        (Item::Index(x), Item::Index(y)) => x == y,
        _ => false,
    }
}

/// FieldsV1 keys hold JSON; a malformed one (already reported by the decoder) matches nothing real.
fn parse(json: &str) -> Value {
    serde_json::from_str(json).unwrap_or_else(|_| Value::String(format!("\u{0}unparsed {json}")))
}

/// Where the walk is: the trie node for the current value (None once the object goes
/// where no entry does) and the owners of an enclosing atomic value.
#[derive(Clone, Copy)]
struct At<'t, 'i> {
    node: Option<&'t Trie>,
    inherited: &'i [usize],
}

impl<'t> At<'t, '_> {
    /// The value's own owners, then those it inherits, each once.
    fn owners(&self) -> Vec<usize> {
        let mut owners = self.node.map(|n| n.owners.clone()).unwrap_or_default();
        add_unique(&mut owners, self.inherited.iter().copied());
        owners
    }

    /// What the value's children inherit: an entry that owns this value and nothing below
    /// it owns it whole (an atomic field such as a Deployment's selector, `f:selector: {}`).
    fn handed_down(&self) -> Vec<usize> {
        let mut owners = self.inherited.to_vec();
        if let Some(n) = self.node {
            add_unique(&mut owners, n.owners.iter().copied().filter(|o| !n.below.contains(o)));
        }
        owners
    }
}

struct Emitter {
    path: Vec<Element>,
    lines: Vec<Line>,
}

impl Emitter {
    fn push(&mut self, text: String, owners: Vec<usize>) {
        self.lines.push(Line { text, path: FieldPath(self.path.clone()), owners });
    }

    fn map(&mut self, map: &Map<String, Value>, indent: usize, at: At, top: bool) {
        let inherited = at.handed_down();
        // Keys sorted, as `kubectl get -o yaml` prints them, so the two read side by side.
        let mut keys: Vec<(&String, &Value)> = map.iter().collect();
        keys.sort_by(|a, b| a.0.cmp(b.0));
        for (key, value) in keys {
            let child = At { node: at.node.and_then(|n| n.fields.get(key)), inherited: &inherited };
            if top
                && key == "metadata"
                && let Value::Object(meta) = value
            {
                let without: Map<String, Value> =
                    meta.iter().filter(|(k, _)| *k != "managedFields").map(|(k, v)| (k.clone(), v.clone())).collect();
                self.entry(key, &Value::Object(without), indent, child);
                continue;
            }
            self.entry(key, value, indent, child);
        }
    }

    fn entry(&mut self, key: &str, value: &Value, indent: usize, at: At) {
        self.path.push(Element::Field(key.into()));
        let pad = " ".repeat(indent);
        let key_text = plain_or_quoted(key);
        match value {
            Value::Object(m) if !m.is_empty() => {
                self.push(format!("{pad}{key_text}:"), at.owners());
                self.map(m, indent + 2, at, false);
            }
            // Sequences sit at their key's indentation, as kubectl prints them.
            Value::Array(a) if !a.is_empty() => {
                self.push(format!("{pad}{key_text}:"), at.owners());
                self.seq(a, indent, at);
            }
            Value::String(s) if block_literal(s).is_some() => {
                let (indicator, body) = block_literal(s).expect("checked above");
                self.push(format!("{pad}{key_text}: {indicator}"), at.owners());
                for l in body {
                    let text = if l.is_empty() { String::new() } else { format!("{pad}  {l}") };
                    self.push(text, at.owners());
                }
            }
            other => self.push(format!("{pad}{key_text}: {}", scalar(other)), at.owners()),
        }
        self.path.pop();
    }

    fn seq(&mut self, items: &[Value], indent: usize, at: At) {
        let pad = " ".repeat(indent);
        let inherited = at.handed_down();
        for (index, item) in items.iter().enumerate() {
            let (element, node) = match at.node.and_then(|n| n.item(item, index)) {
                Some((e, n)) => (e, Some(n)),
                None => (Element::Index(index as u64), None),
            };
            self.path.push(element);
            let item_at = At { node, inherited: &inherited };
            let first = self.lines.len();
            match item {
                Value::Object(m) if !m.is_empty() => self.map(m, indent + 2, item_at, false),
                Value::Array(a) if !a.is_empty() => self.seq(a, indent + 2, item_at),
                other => self.push(format!("{pad}  {}", scalar(other)), Vec::new()),
            }
            // "- " takes the place of the first line's last two spaces of indentation, and
            // the line carries the item's owners before its field's.
            if let Some(line) = self.lines.get_mut(first) {
                line.text = format!("{pad}- {}", &line.text[indent + 2..]);
                let mut owners = item_at.owners();
                add_unique(&mut owners, std::mem::take(&mut line.owners));
                line.owners = owners;
            }
            self.path.pop();
        }
    }
}

/// Appends the entries of `more` that `owners` does not hold yet, keeping the order.
fn add_unique(owners: &mut Vec<usize>, more: impl IntoIterator<Item = usize>) {
    for o in more {
        if !owners.contains(&o) {
            owners.push(o);
        }
    }
}

/// A scalar, an empty map or an empty list on one line.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => plain_or_quoted(s),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        other => other.to_string(),
    }
}

/// The string unquoted when YAML reads it back as the same string, else double-quoted.
pub fn plain_or_quoted(s: &str) -> String {
    if is_plain_yaml(s) { s.to_string() } else { double_quoted(s) }
}

/// A YAML double-quoted scalar; whatever YAML would not take raw (or would read as a line
/// break, such as U+2028) is escaped.
fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if is_safe_raw(c) => out.push(c),
            c if (c as u32) <= 0xFFFF => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push_str(&format!("\\U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// YAML's printable characters, less those some readers take as line breaks or a BOM.
fn is_safe_raw(c: char) -> bool {
    matches!(c, ' '..='~' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
        && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}')
}

fn is_plain_yaml(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || " -._/@=+,:()".contains(c);
    if !s.chars().all(allowed) || s.ends_with([' ', ':']) || s.contains(": ") || s.contains(" #") {
        return false;
    }
    if !first.is_ascii_alphanumeric() && first != '/' {
        // `-x`, `.5`, `+1`, `(a)`: indicators or numbers; keep it simple and quote.
        return false;
    }
    // Numbers, timestamps and sexagesimals (1.5, 0x1F, 1e3, 2024-01-01T10:00:00Z, 1:20) stay strings
    // only when quoted; a letter outside that alphabet (1Gi, 100m, v1) makes it plain.
    if first.is_ascii_digit() && s.chars().all(|c| c.is_ascii_hexdigit() || "xXoOtTzZ._:+- ".contains(c)) {
        return false;
    }
    const KEYWORDS: [&str; 11] = ["null", "true", "false", "yes", "no", "on", "off", "y", "n", "nan", "inf"];
    !KEYWORDS.iter().any(|k| s.eq_ignore_ascii_case(k))
}

/// A multi-line string as a literal block (`|` keeps one final newline, `|-` none), when
/// the block reads back exactly; None when it would not (leading spaces, blank-looking lines).
fn block_literal(s: &str) -> Option<(&'static str, Vec<&str>)> {
    if !s.contains('\n') || s.contains('\r') || s.ends_with("\n\n") {
        return None;
    }
    let (indicator, body) = match s.strip_suffix('\n') {
        Some(body) => ("|", body),
        None => ("|-", s),
    };
    let lines: Vec<&str> = body.split('\n').collect();
    // A block's indentation is read from its first non-empty line, which must not add its own.
    let first = lines.iter().find(|l| !l.is_empty());
    if first.is_none_or(|l| l.starts_with(' '))
        || lines.iter().any(|l| !l.is_empty() && l.trim().is_empty())
        || lines.iter().any(|l| !l.chars().all(is_safe_raw))
    {
        return None;
    }
    Some((indicator, lines))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fields::tests::entry;
    use serde_json::json;

    fn owners_by_line(object: &Value, entries: &[Entry]) -> Vec<(String, Vec<String>)> {
        blame(object, entries)
            .into_iter()
            .map(|l| (l.text, l.owners.iter().map(|&i| entries[i].label()).collect()))
            .collect()
    }

    #[test]
    fn each_line_names_exactly_its_owners() {
        let object = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}, "managedFields": [{"manager": "x"}]},
            "spec": {
                "replicas": 3,
                "template": {"spec": {"containers": [{
                    "name": "web",
                    "image": "nginx:1.27",
                    "imagePullPolicy": "IfNotPresent",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}]
                }]}}
            },
            "status": {"replicas": 3}
        });
        let entries = vec![
            entry(
                "gitops",
                "Apply",
                "",
                json!({"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"web\"}": {".": {}, "f:name": {}, "f:image": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}
                }}}}}),
            ),
            entry("kubectl", "Update", "scale", json!({"f:spec": {"f:replicas": {}}})),
            entry("hpa", "Update", "", json!({"f:spec": {"f:replicas": {}}})),
            entry("kube-controller-manager", "Update", "status", json!({"f:status": {"f:replicas": {}}})),
        ];
        let got = owners_by_line(&object, &entries);
        let want: Vec<(&str, Vec<&str>)> = vec![
            ("apiVersion: apps/v1", vec![]),
            ("kind: Deployment", vec![]),
            ("metadata:", vec![]),
            ("  labels:", vec![]),
            ("    app: web", vec!["gitops"]),
            ("  name: web", vec![]),
            ("spec:", vec![]),
            ("  replicas: 3", vec!["kubectl (scale)", "hpa"]),
            ("  template:", vec![]),
            ("    spec:", vec![]),
            ("      containers:", vec![]),
            ("      - image: nginx:1.27", vec!["gitops"]),
            // A server default next to owned fields: nobody's.
            ("        imagePullPolicy: IfNotPresent", vec![]),
            ("        name: web", vec!["gitops"]),
            ("        ports:", vec![]),
            // The item keyed by containerPort and protocol carries its owner on its first line.
            ("        - containerPort: 80", vec!["gitops"]),
            ("          protocol: TCP", vec![]),
            ("        - containerPort: 443", vec![]),
            ("          protocol: TCP", vec![]),
            ("status:", vec![]),
            ("  replicas: 3", vec!["kube-controller-manager (status)"]),
        ];
        let want: Vec<(String, Vec<String>)> =
            want.into_iter().map(|(t, o)| (t.to_string(), o.into_iter().map(str::to_string).collect())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn an_atomic_value_is_owned_down_to_its_last_line() {
        // A Deployment's selector is atomic: FieldsV1 names it as a leaf, `f:selector: {}`.
        let object = json!({"spec": {"selector": {"matchLabels": {"app": "web"}}, "args": ["a", "b"]}, "metadata": {"labels": {"x": "1"}}});
        let entries = vec![
            entry("gitops", "Apply", "", json!({"f:spec": {"f:selector": {}, "f:args": {}}})),
            // Owning the map itself and one key inside: the other keys are not its own.
            entry("labeler", "Update", "", json!({"f:metadata": {"f:labels": {".": {}, "f:y": {}}}})),
        ];
        let got = owners_by_line(&object, &entries);
        let owned =
            |text: &str| got.iter().find(|(t, _)| t == text).unwrap_or_else(|| panic!("{text}: {got:#?}")).1.clone();
        for line in ["  selector:", "    matchLabels:", "      app: web", "  args:", "  - a", "  - b"] {
            assert_eq!(owned(line), vec!["gitops".to_string()], "{line}");
        }
        assert_eq!(owned("  labels:"), vec!["labeler".to_string()]);
        assert!(owned("    x: \"1\"").is_empty(), "{got:#?}");
    }

    #[test]
    fn set_items_and_owned_maps() {
        let object =
            json!({"metadata": {"finalizers": ["a/x", "b/y"], "labels": {"app": "web"}}, "args": ["--v", "2"]});
        let entries = vec![
            entry(
                "ctl",
                "Update",
                "",
                json!({"f:metadata": {"f:finalizers": {".": {}, "v:\"b/y\"": {}}, "f:labels": {".": {}, "f:gone": {}}}}),
            ),
            entry("cli", "Update", "", json!({"f:args": {"i:1": {}}})),
        ];
        let got = owners_by_line(&object, &entries);
        let find =
            |text: &str| got.iter().find(|(t, _)| t == text).unwrap_or_else(|| panic!("{text}: {got:#?}")).1.len();
        assert_eq!(find("  finalizers:"), 1);
        assert_eq!(find("  - a/x"), 0);
        assert_eq!(find("  - b/y"), 1);
        assert_eq!(find("  labels:"), 1);
        assert_eq!(find("    app: web"), 0);
        assert_eq!(find("- \"--v\""), 0);
        assert_eq!(find("- \"2\""), 1);
    }

    #[test]
    fn quoting_keeps_strings_strings() {
        for s in [
            "80",
            "1.5",
            "true",
            "No",
            "null",
            "",
            " x",
            "a: b",
            "x #y",
            "-",
            "0x1F",
            "2024-01-01",
            "10.0.0.1",
            "{a}",
            "*",
            "~",
        ] {
            let shown = plain_or_quoted(s);
            assert!(shown.starts_with('"'), "{s:?} shown as {shown}");
            assert_eq!(serde_saphyr::from_str::<String>(&shown).unwrap(), s);
        }
        for s in ["web", "nginx:1.27", "1Gi", "100m", "v1", "app.kubernetes.io/name", "IfNotPresent", "/healthz"] {
            assert_eq!(plain_or_quoted(s), s);
            assert_eq!(serde_saphyr::from_str::<String>(s).unwrap(), s);
        }
    }

    #[test]
    fn the_yaml_reads_back_as_the_object() {
        let object = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {"note": "two\nlines\n", "raw": "no final newline\nhere", "odd": "  lead\n"}},
            "data": {"a": "1", "empty": "", "list": [], "map": {}, "nested": [[1, 2], {"k": [true, null]}], "num": 1.5}
        });
        let text: String = blame(&object, &[]).into_iter().map(|l| l.text + "\n").collect();
        let back: Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(back, object, "{text}");
    }

    proptest::proptest! {
        #[test]
        fn any_string_reads_back(s in "(?s).{0,12}|[ -~\n]{0,12}") {
            let object = json!({"k": s, "l": [s.clone()], s.clone(): 1});
            let text: String = blame(&object, &[]).into_iter().map(|l| l.text + "\n").collect();
            let back: Value = serde_saphyr::from_str(&text).unwrap();
            proptest::prop_assert_eq!(back, object, "{}", text);
        }
    }
}
