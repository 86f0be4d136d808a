//! What `kubectl delete --cascade=POLICY` on one object will do, predicted from the
//! owner graph with the garbage collector's rules. Pure.
//!
//! - background: the object goes at once; every dependent whose owners are then all
//!   gone (deleted, or already dangling) is collected, recursively. A dependent with
//!   another live owner is kept and only loses the reference.
//! - foreground: the same objects are deleted, but an owner stays (with the
//!   foregroundDeletion finalizer) until each dependent that has blockOwnerDeletion is gone.
//!   The collector deletes every dependent at once, in its first pass: one without
//!   blockOwnerDeletion neither waits for its owner nor holds it.
//! - orphan: only the object goes; its direct dependents lose the reference and stay.

use serde::Serialize;

use super::owner_graph::{Graph, RefState};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Background,
    Foreground,
    Orphan,
}

/// Finalizers the garbage collector itself adds and removes while it deletes.
const GC_FINALIZERS: &[&str] = &["orphan", "foregroundDeletion"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// Finalizers other than the GC's own: the object stays Terminating until they are removed.
    Finalizers(Vec<String>),
    /// Foreground only: `owner` is not removed before this dependent is gone.
    HoldsOwner(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prediction {
    pub policy: Policy,
    /// Every object the deletion removes, the root first.
    pub delete: Vec<usize>,
    /// Dependents that stay because another owner is live: (object, the deleted owners it loses).
    pub keep: Vec<(usize, Vec<usize>)>,
    /// Orphan policy: the root's dependents, which stay and lose the reference.
    pub orphan: Vec<usize>,
    pub blocks: Vec<(usize, Block)>,
    /// Steps in which deletions complete; objects in one step do not wait for each other.
    pub order: Vec<Vec<usize>>,
    /// Objects whose deletion can never complete: they wait on each other (a cycle).
    pub deadlocked: Vec<usize>,
}

pub fn predict(graph: &Graph, root: usize, policy: Policy) -> Prediction {
    let n = graph.objects.len();
    let mut deleted = vec![false; n];
    deleted[root] = true;
    let mut delete = vec![root];
    let mut orphan = Vec::new();
    if policy == Policy::Orphan {
        orphan = live_dependents(graph, root).collect();
        orphan.sort_unstable();
        orphan.dedup();
    } else {
        // Breadth first; an object joins only once all its owners are gone, so `delete`
        // ends up in an order where owners come before their dependents.
        let mut next = 0;
        while next < delete.len() {
            let owner = delete[next];
            next += 1;
            for d in live_dependents(graph, owner) {
                if deleted[d] {
                    continue;
                }
                let all_gone = graph.refs[d].iter().all(|s| match s {
                    RefState::Live(o) => deleted[*o],
                    other => other.absent(),
                });
                if all_gone {
                    deleted[d] = true;
                    delete.push(d);
                }
            }
        }
    }
    let mut keep = Vec::new();
    if policy != Policy::Orphan {
        for d in 0..n {
            if deleted[d] {
                continue;
            }
            let mut lost: Vec<usize> = graph.refs[d]
                .iter()
                .filter_map(|s| match s {
                    RefState::Live(o) if deleted[*o] => Some(*o),
                    _ => None,
                })
                .collect();
            if !lost.is_empty() {
                lost.sort_unstable();
                lost.dedup();
                keep.push((d, lost));
            }
        }
    }
    let mut blocks = Vec::new();
    for &o in &delete {
        let own: Vec<String> =
            graph.objects[o].finalizers().iter().filter(|f| !GC_FINALIZERS.contains(&f.as_str())).cloned().collect();
        if !own.is_empty() {
            blocks.push((o, Block::Finalizers(own)));
        }
        if policy == Policy::Foreground {
            for (k, s) in graph.refs[o].iter().enumerate() {
                if let RefState::Live(owner) = s
                    && deleted[*owner]
                    && graph.objects[o].owner_refs[k].blocks()
                {
                    blocks.push((o, Block::HoldsOwner(*owner)));
                }
            }
        }
    }
    let (order, deadlocked) = completion_order(graph, &delete, &deleted, policy);
    Prediction { policy, delete, keep, orphan, blocks, order, deadlocked }
}

/// Objects holding a live reference to `owner`.
fn live_dependents(graph: &Graph, owner: usize) -> impl Iterator<Item = usize> + '_ {
    graph.dependents(owner).iter().filter(move |&&(d, k)| graph.refs[d][k] == RefState::Live(owner)).map(|&(d, _)| d)
}

/// Kahn's algorithm over "must complete before" constraints between deleted objects:
/// in background an owner goes before its dependents; in foreground a blocking
/// dependent goes before its owner, and a non-blocking one is deleted at once, unordered
/// with its owner.
fn completion_order(
    graph: &Graph,
    delete: &[usize],
    deleted: &[bool],
    policy: Policy,
) -> (Vec<Vec<usize>>, Vec<usize>) {
    let n = graph.objects.len();
    let mut after: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut waiting = vec![0usize; n];
    let root = delete[0];
    for &d in delete {
        for (k, s) in graph.refs[d].iter().enumerate() {
            let RefState::Live(o) = *s else { continue };
            if !deleted[o] || o == d || (policy == Policy::Background && d == root) {
                continue;
            }
            let (first, then) = if policy == Policy::Foreground {
                if !graph.objects[d].owner_refs[k].blocks() {
                    continue;
                }
                (d, o)
            } else if d == root {
                // The root is deleted explicitly; an owner of it does not hold it back.
                continue;
            } else {
                (o, d)
            };
            after[first].push(then);
            waiting[then] += 1;
        }
    }
    let mut order = Vec::new();
    let mut ready: Vec<usize> = delete.iter().copied().filter(|&o| waiting[o] == 0).collect();
    let mut done = 0;
    while !ready.is_empty() {
        ready.sort_unstable();
        let mut next = Vec::new();
        for &o in &ready {
            done += 1;
            for &t in &after[o] {
                waiting[t] -= 1;
                if waiting[t] == 0 {
                    next.push(t);
                }
            }
        }
        order.push(std::mem::replace(&mut ready, next));
    }
    let mut deadlocked: Vec<usize> =
        if done < delete.len() { delete.iter().copied().filter(|&o| waiting[o] > 0).collect() } else { Vec::new() };
    deadlocked.sort_unstable();
    (order, deadlocked)
}

#[cfg(test)]
mod tests {
    use super::super::owner_graph::Deletion;
    use super::super::owner_graph::tests::{coverage, obj};
    use super::*;

    fn name_list(g: &Graph, v: &[usize]) -> Vec<String> {
        let mut names: Vec<String> = v.iter().map(|&i| g.objects[i].name.clone()).collect();
        names.sort();
        names
    }

    fn graph() -> Graph {
        Graph::build(
            vec![
                obj("d", "Deployment", Some("a"), "web", &[]),
                obj("rs", "ReplicaSet", Some("a"), "web-1", &[("Deployment", "web", "d", true, true)]),
                obj("p1", "Pod", Some("a"), "web-1-a", &[("ReplicaSet", "web-1", "rs", true, true)]),
                obj("p2", "Pod", Some("a"), "web-1-b", &[("ReplicaSet", "web-1", "rs", true, false)]),
                // Shared with a live Widget: kept, loses the reference.
                obj("w", "Widget", Some("a"), "keeper", &[]),
                obj(
                    "c1",
                    "ConfigMap",
                    Some("a"),
                    "shared",
                    &[("ReplicaSet", "web-1", "rs", false, true), ("Widget", "keeper", "w", false, false)],
                ),
                // Its other owner is already dangling: collected too.
                obj(
                    "c2",
                    "ConfigMap",
                    Some("a"),
                    "half-dangling",
                    &[("Deployment", "web", "d", false, false), ("Widget", "ghost", "nope", false, false)],
                ),
            ],
            &coverage(),
        )
    }

    #[test]
    fn background_collects_what_has_no_owner_left() {
        let g = graph();
        let p = predict(&g, 0, Policy::Background);
        assert_eq!(name_list(&g, &p.delete), vec!["half-dangling", "web", "web-1", "web-1-a", "web-1-b"]);
        assert_eq!(p.keep, vec![(5, vec![1])]);
        assert!(p.orphan.is_empty() && p.blocks.is_empty() && p.deadlocked.is_empty());
        let steps: Vec<Vec<String>> = p.order.iter().map(|s| name_list(&g, s)).collect();
        assert_eq!(steps, vec![vec!["web"], vec!["half-dangling", "web-1"], vec!["web-1-a", "web-1-b"]]);
    }

    #[test]
    fn foreground_waits_for_blocking_dependents_first() {
        let g = graph();
        let p = predict(&g, 0, Policy::Foreground);
        assert_eq!(name_list(&g, &p.delete), vec!["half-dangling", "web", "web-1", "web-1-a", "web-1-b"]);
        assert!(p.blocks.contains(&(1, Block::HoldsOwner(0))));
        assert!(p.blocks.contains(&(2, Block::HoldsOwner(1))));
        assert!(!p.blocks.iter().any(|(o, _)| *o == 3), "web-1-b does not block its owner");
        let steps: Vec<Vec<String>> = p.order.iter().map(|s| name_list(&g, s)).collect();
        // Every dependent is deleted in the collector's first pass: the non-blocking ones
        // (web-1-b, half-dangling) are gone at once, while the blocking pod holds its
        // ReplicaSet and the ReplicaSet holds the Deployment.
        assert_eq!(steps, vec![vec!["half-dangling", "web-1-a", "web-1-b"], vec!["web-1"], vec!["web"]]);
    }

    #[test]
    fn orphan_deletes_only_the_root() {
        let g = graph();
        let p = predict(&g, 0, Policy::Orphan);
        assert_eq!(p.delete, vec![0]);
        assert_eq!(name_list(&g, &p.orphan), vec!["half-dangling", "web-1"]);
        assert!(p.keep.is_empty());
        assert_eq!(p.order, vec![vec![0]]);
    }

    #[test]
    fn finalizers_block_and_foreground_cycles_deadlock() {
        let mut objects = vec![
            obj("r", "Widget", Some("a"), "root", &[]),
            obj("x", "ConfigMap", Some("a"), "x", &[("Widget", "root", "r", false, true)]),
        ];
        objects[1].deletion = Deletion::new(None, vec!["example.com/hold".into(), "foregroundDeletion".into()]);
        let g = Graph::build(objects, &coverage());
        let p = predict(&g, 0, Policy::Background);
        assert_eq!(p.blocks, vec![(1, Block::Finalizers(vec!["example.com/hold".into()]))]);

        // Root and a dependent that owns the root back, both blocking.
        let g = Graph::build(
            vec![
                obj("r", "Widget", Some("a"), "root", &[("ConfigMap", "x", "x", false, true)]),
                obj("x", "ConfigMap", Some("a"), "x", &[("Widget", "root", "r", false, true)]),
            ],
            &coverage(),
        );
        let bg = predict(&g, 0, Policy::Background);
        assert_eq!(bg.delete, vec![0, 1]);
        assert!(bg.deadlocked.is_empty());
        let fg = predict(&g, 0, Policy::Foreground);
        assert_eq!(fg.deadlocked, vec![0, 1]);
    }

    use proptest::prelude::*;

    /// Random graphs of ConfigMaps: each reference points at another object, at itself,
    /// or at a missing uid; flags random.
    fn arb_graph() -> impl Strategy<Value = Graph> {
        (1usize..8)
            .prop_flat_map(|n| {
                let refs = proptest::collection::vec((0..n + 2, any::<bool>(), any::<bool>()), 0..3);
                (Just(n), proptest::collection::vec(refs, n))
            })
            .prop_map(|(n, refs)| {
                let objects: Vec<crate::analyze::owner_graph::Object> = refs
                    .into_iter()
                    .enumerate()
                    .map(|(i, rs)| {
                        let owners: Vec<(String, String, bool, bool)> = rs
                            .into_iter()
                            .map(|(t, c, b)| {
                                if t < n {
                                    (format!("o{t}"), format!("u{t}"), c, b)
                                } else {
                                    (format!("gone{t}"), format!("x{t}"), c, b)
                                }
                            })
                            .collect();
                        let owners: Vec<(&str, &str, &str, bool, bool)> =
                            owners.iter().map(|(nm, u, c, b)| ("ConfigMap", nm.as_str(), u.as_str(), *c, *b)).collect();
                        obj(&format!("u{i}"), "ConfigMap", Some("a"), &format!("o{i}"), &owners)
                    })
                    .collect();
                Graph::build(objects, &coverage())
            })
    }

    /// The garbage collector's rule applied naively to every object until nothing changes.
    fn brute_force_deleted(g: &Graph, root: usize) -> Vec<bool> {
        let mut deleted = vec![false; g.objects.len()];
        deleted[root] = true;
        loop {
            let mut changed = false;
            for o in 0..g.objects.len() {
                if deleted[o] {
                    continue;
                }
                let states = &g.refs[o];
                let into_deleted = states.iter().any(|s| matches!(s, RefState::Live(x) if deleted[*x]));
                let none_alive = states.iter().all(|s| match s {
                    RefState::Live(x) => deleted[*x],
                    other => other.absent(),
                });
                if into_deleted && none_alive {
                    deleted[o] = true;
                    changed = true;
                }
            }
            if !changed {
                return deleted;
            }
        }
    }

    proptest! {
        #[test]
        fn delete_set_matches_the_naive_fixpoint(g in arb_graph(), root_pick in 0usize..8) {
            let root = root_pick % g.objects.len();
            let want = brute_force_deleted(&g, root);
            for policy in [Policy::Background, Policy::Foreground] {
                let p = predict(&g, root, policy);
                let mut got = vec![false; g.objects.len()];
                p.delete.iter().for_each(|&o| got[o] = true);
                prop_assert_eq!(&got, &want);
                prop_assert_eq!(p.delete[0], root);
                // Every step's objects are deleted ones, each once, unless deadlocked.
                let ordered: Vec<usize> = p.order.iter().flatten().copied().chain(p.deadlocked.iter().copied()).collect();
                let mut sorted = ordered.clone();
                sorted.sort_unstable();
                let mut expected = p.delete.clone();
                expected.sort_unstable();
                prop_assert_eq!(sorted, expected);
                // Kept objects are exactly the survivors that lose a live owner.
                for (k, lost) in &p.keep {
                    prop_assert!(!got[*k] && !lost.is_empty() && lost.iter().all(|&o| got[o]));
                }
            }
            let orphan = predict(&g, root, Policy::Orphan);
            prop_assert_eq!(orphan.delete, vec![root]);
        }
    }
}
