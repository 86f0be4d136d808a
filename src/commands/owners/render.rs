//! Text and machine output for `owners`.

use crate::commands::overlaps::files::FileObject;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use jiff::Timestamp;
use serde::Serialize;

use super::Target;
use super::fetch::{Scope, Skipped};
use crate::age::since as age;
use crate::analyze::cascade::{Block, Policy, Prediction};
use crate::analyze::object_status::Health;
use crate::analyze::owner_graph::{Finding, FindingKind, Graph, OwnerRef, RefState};
use crate::analyze::uid::Uid;
use crate::output::counted;
use crate::output::table::{Grid, Styled, Table, Tone, styled};
use crate::output::{Printer, SCHEMA_VERSION, paint, serde_name};

pub struct Trees<'a> {
    pub graph: &'a Graph,
    pub targets: &'a [Target],
    pub printed: &'a BTreeSet<usize>,
    pub statuses: &'a HashMap<usize, (String, Health)>,
    pub findings: &'a [Finding],
    pub skipped: &'a [Skipped],
    pub server_time: Option<Timestamp>,
}

pub struct Scan<'a> {
    pub graph: &'a Graph,
    pub findings: &'a [Finding],
    pub skipped: &'a [Skipped],
    pub server_time: Option<Timestamp>,
    pub scope: &'a Scope,
    /// With -f: the files' objects, the only ones findings are reported for.
    pub files: Option<&'a [FileObject]>,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef<'a> {
    api_version: &'a str,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    name: &'a str,
    uid: &'a Uid,
}

fn object_ref(graph: &Graph, n: usize) -> ObjectRef<'_> {
    let o = &graph.objects[n];
    ObjectRef {
        api_version: &o.api_version,
        kind: &o.kind,
        namespace: o.namespace.as_deref(),
        name: &o.name,
        uid: &o.uid,
    }
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct NodeOut<'a> {
    #[serde(flatten)]
    object: ObjectRef<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    created: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deletion_timestamp: Option<Timestamp>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    finalizers: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a str>,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct EdgeOut<'a> {
    owner: &'a Uid,
    dependent: &'a Uid,
    controller: bool,
    block_owner_deletion: bool,
    /// false when the garbage collector treats the reference as absent (another namespace).
    valid: bool,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct FindingOut<'a> {
    kind: FindingKind,
    /// The kind's stable code (CO2xx).
    code: &'static str,
    object: ObjectRef<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reference: Option<&'a OwnerRef>,
    message: &'a str,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct KeepOut<'a> {
    object: ObjectRef<'a>,
    /// The deleted owners whose references it loses.
    loses: Vec<ObjectRef<'a>>,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct BlockOut<'a> {
    object: ObjectRef<'a>,
    /// "finalizers" or "block-owner-deletion".
    reason: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    finalizers: Option<&'a [String]>,
    /// The owner this dependent holds back (foreground).
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: Option<ObjectRef<'a>>,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct CascadeOut<'a> {
    target: &'a Uid,
    policy: Policy,
    delete: Vec<ObjectRef<'a>>,
    keep: Vec<KeepOut<'a>>,
    orphan: Vec<ObjectRef<'a>>,
    blocks: Vec<BlockOut<'a>>,
    order: Vec<Vec<ObjectRef<'a>>>,
    deadlocked: Vec<ObjectRef<'a>>,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeReport<'a> {
    api_version: &'static str,
    kind: &'static str,
    server_time: Option<Timestamp>,
    targets: Vec<ObjectRef<'a>>,
    nodes: Vec<NodeOut<'a>>,
    edges: Vec<EdgeOut<'a>>,
    findings: Vec<FindingOut<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    cascade: Vec<CascadeOut<'a>>,
    skipped: &'a [Skipped],
    /// false when some resource type could not be listed: dependents may be missing.
    complete: bool,
}

#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScanReport<'a> {
    api_version: &'static str,
    kind: &'static str,
    server_time: Option<Timestamp>,
    /// The namespace scanned; absent for all namespaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    objects: usize,
    findings: Vec<FindingOut<'a>>,
    skipped: &'a [Skipped],
    complete: bool,
    /// With -f: the files' objects, with their file and document (findings are theirs alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<&'a [FileObject]>,
}

fn findings_out<'a>(graph: &'a Graph, findings: &'a [Finding]) -> Vec<FindingOut<'a>> {
    findings
        .iter()
        .map(|f| FindingOut {
            kind: f.kind,
            code: f.kind.code(),
            object: object_ref(graph, f.object),
            reference: f.reference.map(|k| &graph.objects[f.object].owner_refs[k]),
            message: &f.message,
        })
        .collect()
}

impl<'a> Trees<'a> {
    pub fn machine(&self) -> TreeReport<'a> {
        let g = self.graph;
        let nodes = self
            .printed
            .iter()
            .map(|&n| {
                let o = &g.objects[n];
                NodeOut {
                    object: object_ref(g, n),
                    created: o.created,
                    deletion_timestamp: o.deleting_since(),
                    finalizers: o.finalizers(),
                    status: self.statuses.get(&n).map(|(s, _)| s.as_str()),
                }
            })
            .collect();
        let mut edges = Vec::new();
        for &d in self.printed {
            for (o, k) in g.owners(d) {
                if self.printed.contains(&o) {
                    let r = &g.objects[d].owner_refs[k];
                    edges.push(EdgeOut {
                        owner: &g.objects[o].uid,
                        dependent: &g.objects[d].uid,
                        controller: r.is_controller(),
                        block_owner_deletion: r.blocks(),
                        valid: matches!(g.refs[d][k], RefState::Live(_)),
                    });
                }
            }
        }
        let cascade =
            self.targets.iter().filter_map(|t| t.cascade.as_ref().map(|p| cascade_out(g, t.node, p))).collect();
        TreeReport {
            api_version: SCHEMA_VERSION,
            kind: "OwnerGraph",
            server_time: self.server_time,
            targets: self.targets.iter().map(|t| object_ref(g, t.node)).collect(),
            nodes,
            edges,
            findings: findings_out(g, self.findings),
            cascade,
            skipped: self.skipped,
            complete: self.skipped.is_empty(),
        }
    }

    pub fn text(&self, printer: &Printer) -> String {
        let mut sections = Vec::new();
        for t in self.targets {
            let mut text = self.grid(t, printer);
            if let Some(p) = &t.cascade {
                text.push('\n');
                text.push_str(&cascade_text(self.graph, t.node, p));
            }
            sections.push(text);
        }
        let mut text = sections.join("\n");
        text.push_str(&findings_text(self.graph, self.findings, printer));
        text
    }

    fn grid(&self, t: &Target, printer: &Printer) -> String {
        let g = self.graph;
        let home = g.objects[t.node].namespace.as_deref();
        let show_ns = t.rows.iter().any(|r| g.objects[r.node].namespace.as_deref() != home);
        let mut headers = vec!["KIND", "NAME"];
        if show_ns {
            headers.push("NAMESPACE");
        }
        headers.extend(["CONTROLLER", "BLOCKS", "STATUS", "AGE"]);
        let mut grid = Grid::new(headers);
        for row in &t.rows {
            let o = &g.objects[row.node];
            let dim = |s: String| if row.repeat { styled(s, Tone::Dim) } else { Styled::from(s) };
            let mut cells = vec![dim(format!("{}{}", row.prefix, o.kind)), dim(o.name.clone())];
            if show_ns {
                let ns = match o.namespace.as_deref() {
                    n if n == home => String::new(),
                    Some(n) => n.to_string(),
                    None => "<cluster>".to_string(),
                };
                cells.push(ns.into());
            }
            let reference = row.via.map(|(d, k)| &g.objects[d].owner_refs[k]);
            let yes_no = |b: bool| if b { "yes" } else { "no" };
            cells.push(reference.map(|r| yes_no(r.is_controller())).unwrap_or_default().into());
            cells.push(reference.map(|r| yes_no(r.blocks())).unwrap_or_default().into());
            cells.push(if row.repeat {
                styled("(shown above)", Tone::Dim)
            } else if o.deleting_since().is_some() {
                let mut s = "Terminating".to_string();
                if !o.finalizers().is_empty() {
                    s.push_str(&format!(" (finalizers: {})", o.finalizers().join(", ")));
                }
                styled(s, Tone::Warn)
            } else {
                match self.statuses.get(&row.node) {
                    Some((s, h)) => styled(s.clone(), tone(*h)),
                    None => "".into(),
                }
            });
            cells.push(age(o.created, self.server_time).into());
            grid.row(cells);
        }
        grid.render(printer)
    }
}

impl<'a> Scan<'a> {
    pub fn machine(&self) -> ScanReport<'a> {
        ScanReport {
            api_version: SCHEMA_VERSION,
            kind: "OwnerScan",
            server_time: self.server_time,
            namespace: match self.scope {
                Scope::Namespace(ns) => Some(ns),
                Scope::AllNamespaces => None,
            },
            objects: self.graph.objects.len(),
            findings: findings_out(self.graph, self.findings),
            skipped: self.skipped,
            complete: self.skipped.is_empty(),
            files: self.files,
        }
    }

    /// No grid: a count line, then one line per finding.
    pub fn table(&self, printer: &Printer) -> Table {
        let mut lines = vec![format!(
            "{} read, {} with ownerReferences, {}",
            counted(self.graph.objects.len(), "object"),
            self.graph.objects.iter().filter(|o| !o.owner_refs.is_empty()).count(),
            counted(self.findings.len(), "finding")
        )];
        lines.extend(findings_text(self.graph, self.findings, printer).lines().map(str::to_string));
        if let Some(files) = self.files {
            lines.push(crate::commands::overlaps::files::files_line(files));
        }
        Table { grid: Grid::new(Vec::new()), empty: None, lines }
    }
}

fn tone(h: Health) -> Tone {
    match h {
        Health::Good => Tone::Good,
        Health::Degraded => Tone::Warn,
        Health::Failed => Tone::Bad,
        Health::Neutral => Tone::Plain,
    }
}

/// "ReplicaSet ns/web-1", or "ClusterRole admin" for a cluster-scoped object.
fn label(graph: &Graph, n: usize) -> String {
    let o = &graph.objects[n];
    match &o.namespace {
        Some(ns) => format!("{} {ns}/{}", o.kind, o.name),
        None => format!("{} {}", o.kind, o.name),
    }
}

fn findings_text(graph: &Graph, findings: &[Finding], printer: &Printer) -> String {
    let mut text = String::new();
    if !findings.is_empty() {
        text.push('\n');
    }
    for f in findings {
        let code = f.kind.code();
        let line = format!("{}: {code} {}: {}", label(graph, f.object), serde_name(&f.kind), f.message);
        text.push_str(&paint(&line, Tone::Bad, printer.color));
        text.push('\n');
    }
    text
}

/// At most this many objects are named in one line of the preview; the rest are counted by kind.
const NAMED: usize = 8;

fn list(graph: &Graph, nodes: &[usize]) -> String {
    if nodes.len() <= NAMED {
        return nodes.iter().map(|&n| label(graph, n)).collect::<Vec<_>>().join(", ");
    }
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for &n in nodes {
        *by_kind.entry(&*graph.objects[n].kind).or_default() += 1;
    }
    by_kind.into_iter().map(|(k, c)| format!("{c} {k}")).collect::<Vec<_>>().join(", ")
}

fn cascade_text(graph: &Graph, root: usize, p: &Prediction) -> String {
    let policy = serde_name(&p.policy);
    let mut text = format!("kubectl delete --cascade={policy} {} would:\n", label(graph, root));
    text.push_str(&format!("  delete ({}): {}\n", p.delete.len(), list(graph, &p.delete)));
    for (n, lost) in &p.keep {
        text.push_str(&format!(
            "  keep: {} (another owner is live; loses its reference to {})\n",
            label(graph, *n),
            list(graph, lost)
        ));
    }
    if !p.orphan.is_empty() {
        text.push_str(&format!(
            "  orphan ({}): {} (they lose the reference and stay)\n",
            p.orphan.len(),
            list(graph, &p.orphan)
        ));
    }
    for (n, block) in &p.blocks {
        let line = match block {
            Block::Finalizers(f) => {
                format!(
                    "  blocked: {} stays Terminating until finalizers are removed: {}\n",
                    label(graph, *n),
                    f.join(", ")
                )
            }
            Block::HoldsOwner(owner) => format!(
                "  waits: {} is not removed before {} is gone (blockOwnerDeletion)\n",
                label(graph, *owner),
                label(graph, *n)
            ),
        };
        text.push_str(&line);
    }
    for (i, step) in p.order.iter().enumerate() {
        text.push_str(&format!("  step {}: {}\n", i + 1, list(graph, step)));
    }
    if !p.deadlocked.is_empty() {
        text.push_str(&format!(
            "  never completes: {} wait on each other (a reference cycle)\n",
            list(graph, &p.deadlocked)
        ));
    }
    text
}

fn cascade_out<'a>(graph: &'a Graph, root: usize, p: &'a Prediction) -> CascadeOut<'a> {
    let refs = |v: &[usize]| v.iter().map(|&n| object_ref(graph, n)).collect::<Vec<_>>();
    CascadeOut {
        target: &graph.objects[root].uid,
        policy: p.policy,
        delete: refs(&p.delete),
        keep: p.keep.iter().map(|(n, lost)| KeepOut { object: object_ref(graph, *n), loses: refs(lost) }).collect(),
        orphan: refs(&p.orphan),
        blocks: p
            .blocks
            .iter()
            .map(|(n, b)| match b {
                Block::Finalizers(f) => {
                    BlockOut { object: object_ref(graph, *n), reason: "finalizers", finalizers: Some(f), owner: None }
                }
                Block::HoldsOwner(o) => BlockOut {
                    object: object_ref(graph, *n),
                    reason: "block-owner-deletion",
                    finalizers: None,
                    owner: Some(object_ref(graph, *o)),
                },
            })
            .collect(),
        order: p.order.iter().map(|s| refs(s)).collect(),
        deadlocked: refs(&p.deadlocked),
    }
}

/// Types that could not be listed, on stderr: the output above may be missing objects.
pub fn footer(printer: &Printer, skipped: &[Skipped]) {
    for line in footer_lines(skipped) {
        printer.warn(&line);
    }
}

/// What could not be listed, one warning per reason.
pub fn footer_lines(skipped: &[Skipped]) -> Vec<String> {
    let mut by_reason: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for s in skipped {
        let name = match &s.namespace {
            Some(ns) => format!("{} (in {ns})", s.resource),
            None => s.resource.clone(),
        };
        by_reason.entry(&s.reason).or_default().push(name);
    }
    by_reason
        .into_iter()
        .map(|(reason, names)| format!("not listed, {reason}: {}; the result may be incomplete", few(&names)))
        .collect()
}

/// How many names a warning spells out before it counts the rest.
const SPELLED: usize = 5;

/// `names`, joined; past a few of them a count instead, so that 300 forbidden CRDs make a
/// line a person can read. The machine output's `skipped` keeps every one.
fn few(names: &[String]) -> String {
    if names.len() <= SPELLED + 1 {
        return names.join(", ");
    }
    format!("{} and {} more (-o json lists them all)", names[..SPELLED].join(", "), names.len() - SPELLED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::cascade::predict;
    use crate::analyze::owner_graph::tests::{coverage, obj};
    use crate::analyze::owner_graph::{Walk, findings, tree};

    /// Six names are spelled out; from seven on, five and a count.
    #[test]
    fn footer_counts_past_a_few_names() {
        let skip = |i: usize| Skipped {
            resource: format!("kind{i}.group.test"),
            namespace: None,
            reason: "forbidden".to_string(),
        };
        let six: Vec<_> = (0..6).map(skip).collect();
        assert_eq!(
            footer_lines(&six),
            ["not listed, forbidden: kind0.group.test, kind1.group.test, kind2.group.test, kind3.group.test, \
              kind4.group.test, kind5.group.test; the result may be incomplete"]
        );
        let many: Vec<_> = (0..300).map(skip).collect();
        assert_eq!(
            footer_lines(&many),
            ["not listed, forbidden: kind0.group.test, kind1.group.test, kind2.group.test, kind3.group.test, \
              kind4.group.test and 295 more (-o json lists them all); the result may be incomplete"]
        );
    }

    /// A Deployment's tree as the real controllers build it, a ConfigMap owned by a Widget
    /// with long names, and a reference to an owner that is gone: the tree, the foreground
    /// cascade and the finding, at 80 and 120 columns.
    #[test]
    fn fits_80_and_120_columns() {
        let ns = Some("coord-demo");
        let (d, rs) = ("checkout", "checkout-77c7c8857f");
        let mut objects = vec![
            obj("d", "Deployment", ns, d, &[]),
            obj("rs", "ReplicaSet", ns, rs, &[("Deployment", d, "d", true, true)]),
            obj("w", "Widget", ns, "release-v1-assets-with-a-long-name", &[("Deployment", d, "d", false, false)]),
            obj(
                "cm",
                "ConfigMap",
                ns,
                "release-v1-assets-with-a-long-name-settings",
                &[("Widget", "release-v1-assets-with-a-long-name", "w", true, true)],
            ),
            obj(
                "cm2",
                "ConfigMap",
                ns,
                "release-v1-dangling",
                &[("ConfigMap", "release-v1", "gone-uid", false, false)],
            ),
        ];
        for p in ["ng2hr", "pg5q5"] {
            objects.push(obj(
                &format!("p-{p}"),
                "Pod",
                ns,
                &format!("{rs}-{p}"),
                &[("ReplicaSet", rs, "rs", true, true)],
            ));
        }
        let graph = Graph::build(objects, &coverage());
        let root = graph.find("apps", "Deployment", ns, d).unwrap();
        let rows = tree(&graph, root, Walk { up: true, down: true, depth: None });
        let targets = vec![Target { node: root, rows, cascade: Some(predict(&graph, root, Policy::Foreground)) }];
        let printed: BTreeSet<usize> = targets[0].rows.iter().map(|r| r.node).collect();
        let dangling = graph.find("", "ConfigMap", ns, "release-v1-dangling").unwrap();
        let found = findings(&graph, &[dangling], None, 300);
        assert!(!found.is_empty());
        let mut statuses = HashMap::new();
        statuses.insert(root, ("1/2 ready, 1 updated, 1 unavailable".to_string(), Health::Degraded));
        let trees = Trees {
            graph: &graph,
            targets: &targets,
            printed: &printed,
            statuses: &statuses,
            findings: &found,
            skipped: &[],
            server_time: None,
        };
        for (width, text) in crate::output::screens(|p| crate::output::table::fit_lines(&trees.text(p), p.width)) {
            assert!(text.contains("Deployment") && text.contains("ReplicaSet") && text.contains("CO201"), "{text}");
            insta::assert_snapshot!(format!("owners_tree_{width}"), text);
        }
    }
}
