//! Live sequencing: objects and Events as the watches deliver them, turned into one
//! reaction per change (who did what, and the lag since the change it answers). Times
//! are when this client saw each change arrive (millisecond clock), so lags are
//! measured, not reconstructed from whole-second server times. Pure: the caller
//! stamps every arrival.

use std::collections::{BTreeMap, HashMap, HashSet};

use jiff::Timestamp;
use serde::Serialize;

use super::sequence::{EventSnap, TraceObject};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reaction {
    /// When the change was seen.
    pub time: Timestamp,
    /// The manager (with subresource) that wrote, or the Event's reporter.
    pub who: String,
    /// "replicaset.apps/web-5d8f".
    pub object: String,
    /// created, spec generation 3, status, the fields of another write, deleting, deleted,
    /// event Reason: message.
    pub what: String,
    /// "pod/web-abc created" — the change this one answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lag_ms: Option<i64>,
}

#[derive(Debug, Clone)]
struct Change {
    time: Timestamp,
    text: String,
}

#[derive(Debug)]
struct Member {
    label: String,
    parent: Option<String>,
    /// Each manager entry's last time, to see which advanced.
    writes: HashMap<EntryKey, Option<Timestamp>>,
    generation: Option<i64>,
    deleting: bool,
    /// The last change of any kind (what an Event about it answers).
    last: Option<Change>,
    /// The last change its controller reacts to: its own creation or spec write, or a
    /// change of one of its dependents.
    last_input: Option<Change>,
    /// The last creation or spec write (what its dependents' controller reacts to).
    last_spec: Option<Change>,
}

/// Summary of one writer's reactions.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriterSummary {
    pub who: String,
    pub reactions: usize,
    /// Over reactions with a cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_lag_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_lag_ms: Option<i64>,
}

/// A watch may stay open for hours: what the tracker keeps is bounded by the objects in the
/// chain and the last minute of arrivals, not by how long it ran (see [`Tracker::forget_waiting`]).
#[derive(Debug, Default)]
pub struct Tracker {
    members: HashMap<String, Member>,
    /// Objects whose controller is not (yet) a member, by that controller's uid: another
    /// watch stream may deliver the owner after its dependent.
    pending: HashMap<String, Vec<(TraceObject, Option<Timestamp>)>>,
    /// Event uid -> count seen; an Event's entry goes when the Event is deleted.
    events: HashMap<String, i64>,
    /// Events about objects not (yet) members, by object uid.
    pending_events: HashMap<String, Vec<(EventSnap, Option<Timestamp>)>>,
    /// Members that were deleted: a late update of one must not join it again.
    deleted: HashSet<String>,
    /// Every reaction, kept only when asked for (a Chrome trace draws them all).
    kept: Option<Vec<Reaction>>,
    /// Per writer, each reaction's lag (None: no cause): all the summary needs.
    lags: BTreeMap<String, Vec<Option<i64>>>,
    /// The reactions of the call under way, handed to its caller.
    fresh: Vec<Reaction>,
}

impl Tracker {
    pub fn new(root: &TraceObject) -> Tracker {
        let mut t = Tracker::default();
        t.join(root);
        t
    }

    /// A tracker that also keeps every reaction, for [`Tracker::reactions`].
    pub fn keeping_reactions(root: &TraceObject) -> Tracker {
        Tracker { kept: Some(Vec::new()), ..Tracker::new(root) }
    }

    /// Every reaction so far when made with [`Tracker::keeping_reactions`]; else none.
    pub fn reactions(&self) -> &[Reaction] {
        self.kept.as_deref().unwrap_or_default()
    }

    /// How many reactions there were.
    pub fn reaction_count(&self) -> usize {
        self.lags.values().map(Vec::len).sum()
    }

    /// Forgets the objects and Events waiting for an owner that has not joined: those listed
    /// (no arrival time), which are the state before tracing (a chain member created later
    /// cannot have dependents that were listed before it), and those that arrived before
    /// `cutoff`. Without this a watch keeps every object of its namespace outside the chain,
    /// and each of their updates.
    pub fn forget_waiting(&mut self, cutoff: Timestamp) {
        let recent = |at: &Option<Timestamp>| at.is_some_and(|t| t >= cutoff);
        self.pending.retain(|_, waiting| {
            waiting.retain(|(_, at)| recent(at));
            !waiting.is_empty()
        });
        self.pending_events.retain(|_, waiting| {
            waiting.retain(|(_, at)| recent(at));
            !waiting.is_empty()
        });
    }

    /// An Event was deleted (they expire after an hour): its count is no longer needed.
    pub fn event_removed(&mut self, uid: &str) {
        self.events.remove(uid);
    }

    pub fn is_member(&self, uid: &str) -> bool {
        self.members.contains_key(uid)
    }

    /// Takes in an object (from a list, `at` None: the state before tracing, or from a
    /// watch, `at` the arrival time) and returns the reactions it shows.
    pub fn observe(&mut self, o: &TraceObject, at: Option<Timestamp>) -> Vec<Reaction> {
        self.observe_inner(o, at);
        std::mem::take(&mut self.fresh)
    }

    fn observe_inner(&mut self, o: &TraceObject, at: Option<Timestamp>) {
        if self.deleted.contains(&o.uid) {
            return;
        }
        if self.members.contains_key(&o.uid) {
            self.update(o, at);
            return;
        }
        let Some(parent) = o.controller_uid.clone() else { return };
        if !self.members.contains_key(&parent) {
            self.pending.entry(parent).or_default().push((o.clone(), at));
            return;
        }
        self.join(o);
        if let Some(at) = at {
            let who = o.creator().map(|w| w.label()).unwrap_or_default();
            let cause = self.members[&parent].last_spec.clone();
            self.react(&o.uid, at, who, "created".into(), cause, Kind::Input);
        }
        // Dependents that arrived first join now, in their own arrival order.
        let waiting = self.pending.remove(&o.uid).unwrap_or_default();
        for (child, child_at) in waiting {
            self.observe_inner(&child, child_at);
        }
        let events = self.pending_events.remove(&o.uid).unwrap_or_default();
        for (event, event_at) in events {
            self.event_inner(&event, event_at);
        }
    }

    fn join(&mut self, o: &TraceObject) {
        self.members.insert(
            o.uid.clone(),
            Member {
                label: o.label(),
                parent: o.controller_uid.clone(),
                writes: write_times(o),
                generation: o.generation,
                deleting: o.deleting.is_some(),
                last: None,
                last_input: None,
                last_spec: None,
            },
        );
    }

    fn update(&mut self, o: &TraceObject, at: Option<Timestamp>) {
        let m = self.members.get_mut(&o.uid).expect("member");
        let generation_moved = o.generation.is_some() && o.generation != m.generation;
        let mut advanced: Vec<&super::sequence::Write> =
            o.writes.iter().filter(|w| m.writes.get(&entry_key(w)).is_none_or(|&t| w.time > t)).collect();
        advanced.sort_by_key(|w| (w.time, !w.spec));
        let newly_deleting = o.deleting.is_some() && !m.deleting;
        m.generation = o.generation;
        m.deleting = o.deleting.is_some();
        m.writes = write_times(o);
        let parent = m.parent.clone();
        let Some(at) = at else { return };
        let parent_spec = parent.as_ref().and_then(|p| self.members.get(p)).and_then(|p| p.last_spec.clone());
        let own_input = self.members[&o.uid].last_input.clone();
        let mut spec_reported = false;
        for w in advanced {
            if w.spec && generation_moved && !spec_reported {
                spec_reported = true;
                let what = format!("spec, generation {}", o.generation.unwrap_or_default());
                self.react(&o.uid, at, w.label(), what, parent_spec.clone(), Kind::Input);
            } else if w.status {
                self.react(&o.uid, at, w.label(), "status".into(), own_input.clone(), Kind::Output);
            } else if w.spec {
                self.react(&o.uid, at, w.label(), "spec".into(), parent_spec.clone(), Kind::Input);
            } else {
                let what = if w.fields.is_empty() { "write".to_string() } else { w.fields.join(", ") };
                self.react(&o.uid, at, w.label(), what, None, Kind::Output);
            }
        }
        // Setting deletionTimestamp bumps a pod's generation: that is the deletion, not a spec write.
        if generation_moved && !spec_reported && !newly_deleting {
            // managedFields times have whole seconds: a second write within the same second
            // leaves the entry's time as it was. The newest spec entry is then the likely writer.
            let likely = o.writes.iter().filter(|w| w.spec && w.time.is_some()).max_by_key(|w| w.time);
            let (who, note) = match likely {
                Some(w) => (w.label(), " (same-second write: writer from the newest spec entry)"),
                None => (String::new(), ""),
            };
            let what = format!("spec, generation {}{note}", o.generation.unwrap_or_default());
            self.react(&o.uid, at, who, what, parent_spec.clone(), Kind::Input);
        }
        if newly_deleting {
            self.react(&o.uid, at, String::new(), "deleting".into(), parent_spec, Kind::Output);
        }
    }

    /// The object was deleted (a watch DELETED event). A member is then forgotten but for
    /// its uid; what waited for it as an owner, or was said of it, can no longer join.
    pub fn removed(&mut self, uid: &str, at: Timestamp) -> Vec<Reaction> {
        if self.members.contains_key(uid) && self.deleted.insert(uid.to_string()) {
            let cause = self.members[uid].last.clone();
            self.react(uid, at, String::new(), "deleted".into(), cause, Kind::Output);
            self.members.remove(uid);
        }
        self.pending.remove(uid);
        self.pending_events.remove(uid);
        std::mem::take(&mut self.fresh)
    }

    /// An Event from the list (`at` None) or a watch; a repeat counts only when its count grew.
    pub fn event(&mut self, e: &EventSnap, at: Option<Timestamp>) -> Vec<Reaction> {
        if self.members.contains_key(&e.object_uid) {
            self.event_inner(e, at);
        } else if !self.deleted.contains(&e.object_uid) {
            self.pending_events.entry(e.object_uid.clone()).or_default().push((e.clone(), at));
        }
        std::mem::take(&mut self.fresh)
    }

    fn event_inner(&mut self, e: &EventSnap, at: Option<Timestamp>) {
        let seen = self.events.insert(e.uid.clone(), e.count);
        let Some(at) = at else { return };
        if seen.is_some_and(|c| c >= e.count) {
            return;
        }
        let cause = self.members[&e.object_uid].last.clone();
        let mut what = format!("event {}: {}", e.reason, e.message);
        if e.count > 1 {
            what.push_str(&format!(" (x{})", e.count));
        }
        self.react(&e.object_uid.clone(), at, e.reporter.clone(), what, cause, Kind::Event);
    }

    fn react(&mut self, uid: &str, at: Timestamp, who: String, what: String, cause: Option<Change>, kind: Kind) {
        let m = self.members.get_mut(uid).expect("member");
        let text = format!("{} {what}", m.label);
        let change = Change { time: at, text: text.clone() };
        let reaction = Reaction {
            time: at,
            who,
            object: m.label.clone(),
            what,
            lag_ms: cause.as_ref().map(|c| at.as_millisecond() - c.time.as_millisecond()),
            cause: cause.map(|c| c.text),
        };
        if kind != Kind::Event {
            m.last = Some(change.clone());
        }
        if kind == Kind::Input {
            m.last_input = Some(change.clone());
            m.last_spec = Some(change.clone());
        }
        // A dependent's change is input to its owner's controller.
        if kind != Kind::Event
            && let Some(p) = m.parent.clone()
            && let Some(pm) = self.members.get_mut(&p)
        {
            pm.last_input = Some(change);
        }
        let who = if reaction.who.is_empty() { "(unknown)" } else { reaction.who.as_str() };
        self.lags.entry(who.to_string()).or_default().push(reaction.lag_ms);
        if let Some(kept) = &mut self.kept {
            kept.push(reaction.clone());
        }
        self.fresh.push(reaction);
    }

    /// Reactions per writer, with the median and maximum lag of those with a cause.
    pub fn summary(&self) -> Vec<WriterSummary> {
        self.lags
            .iter()
            .map(|(who, lags)| {
                let mut known: Vec<i64> = lags.iter().flatten().copied().collect();
                known.sort_unstable();
                WriterSummary {
                    who: who.to_string(),
                    reactions: lags.len(),
                    median_lag_ms: (!known.is_empty()).then(|| known[known.len() / 2]),
                    max_lag_ms: known.last().copied(),
                }
            })
            .collect()
    }
}

/// A managedFields entry's identity: manager, operation, subresource.
type EntryKey = (String, String, String);

fn entry_key(w: &super::sequence::Write) -> EntryKey {
    (w.manager.clone(), w.operation.clone(), w.subresource.clone())
}

/// Each entry's last write time, to see later which entries advanced.
fn write_times(o: &TraceObject) -> HashMap<EntryKey, Option<Timestamp>> {
    o.writes.iter().map(|w| (entry_key(w), w.time)).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Creation or spec write: what the object's own controller (and its dependents') react to.
    Input,
    /// Status, metadata, deletion.
    Output,
    Event,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::sequence::tests::{obj, ts, write};

    fn at(ms: i64) -> Option<Timestamp> {
        Some(Timestamp::from_millisecond(1_767_261_600_000 + ms).unwrap())
    }

    fn deployment(generation: i64, writes: Vec<crate::analyze::sequence::Write>) -> TraceObject {
        let mut d = obj("Deployment", "web", "2026-01-01T10:00:00Z");
        d.generation = Some(generation);
        d.writes = writes;
        d
    }

    #[test]
    fn a_rollout_is_a_chain_of_reactions_with_measured_lags() {
        let d1 = deployment(1, vec![write("kubectl", "", "2026-01-01T10:00:00Z", true, false)]);
        let mut t = Tracker::new(&d1);
        // The restart: a spec write by kubectl-rollout.
        let mut d2 = d1.clone();
        d2.generation = Some(2);
        d2.writes.push(write("kubectl-rollout", "", "2026-01-01T10:01:00Z", true, false));
        let r = t.observe(&d2, at(0));
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].who.as_str(), r[0].what.as_str(), r[0].lag_ms),
            ("kubectl-rollout", "spec, generation 2", None)
        );
        // The pod arrives (pods stream) before its ReplicaSet (replicasets stream).
        let mut rs = obj("ReplicaSet", "web-2", "2026-01-01T10:01:00Z");
        rs.controller_uid = Some(d1.uid.clone());
        rs.writes = vec![write("kube-controller-manager", "", "2026-01-01T10:01:00Z", true, false)];
        let mut pod = obj("Pod", "web-2-a", "2026-01-01T10:01:00Z");
        pod.controller_uid = Some(rs.uid.clone());
        pod.writes = vec![write("kube-controller-manager", "", "2026-01-01T10:01:00Z", false, false)];
        assert!(t.observe(&pod, at(40)).is_empty(), "its owner is not known yet");
        let r = t.observe(&rs, at(30));
        assert_eq!(r.len(), 2, "{r:#?}");
        assert_eq!(
            (r[0].object.as_str(), r[0].what.as_str(), r[0].lag_ms),
            ("replicaset.apps/web-2", "created", Some(30))
        );
        assert_eq!(r[0].cause.as_deref(), Some("deployment.apps/web spec, generation 2"));
        assert_eq!((r[1].object.as_str(), r[1].lag_ms), ("pod/web-2-a", Some(10)));
        // The Deployment's status write answers its dependent's creation.
        let mut d3 = d2.clone();
        d3.writes.push(write("kube-controller-manager", "status", "2026-01-01T10:01:01Z", false, true));
        let r = t.observe(&d3, at(55));
        assert_eq!(r[0].what, "status");
        assert_eq!(r[0].cause.as_deref(), Some("replicaset.apps/web-2 created"));
        assert_eq!(r[0].lag_ms, Some(25));
        // An unrelated object never joins.
        let mut stranger = obj("Pod", "other", "2026-01-01T10:01:00Z");
        stranger.controller_uid = Some("nobody".into());
        assert!(t.observe(&stranger, at(60)).is_empty());
        // Events: a repeat with the same count is not a new reaction.
        let e = EventSnap {
            uid: "e1".into(),
            object_uid: pod.uid.clone(),
            reason: "Scheduled".into(),
            reporter: "default-scheduler".into(),
            count: 1,
            ..Default::default()
        };
        assert_eq!(t.event(&e, at(70)).len(), 1);
        assert!(t.event(&e, at(80)).is_empty());
        assert_eq!(t.removed(&pod.uid, at(90).unwrap())[0].what, "deleted");
        assert!(t.removed(&pod.uid, at(95).unwrap()).is_empty());
        let summary = t.summary();
        let kcm = summary.iter().find(|s| s.who == "kube-controller-manager").unwrap();
        assert_eq!((kcm.reactions, kcm.median_lag_ms, kcm.max_lag_ms), (2, Some(30), Some(30)));
    }

    #[test]
    fn the_state_before_tracing_is_not_a_reaction() {
        let d = deployment(1, vec![write("kubectl", "", "2026-01-01T10:00:00Z", true, false)]);
        let mut t = Tracker::new(&d);
        let mut rs = obj("ReplicaSet", "web-1", "2026-01-01T10:00:00Z");
        rs.controller_uid = Some(d.uid.clone());
        assert!(t.observe(&rs, None).is_empty());
        assert!(t.is_member(&rs.uid));
        let e = EventSnap {
            uid: "e".into(),
            object_uid: rs.uid.clone(),
            count: 4,
            last: Some(ts("2026-01-01T10:00:00Z")),
            ..Default::default()
        };
        assert!(t.event(&e, None).is_empty());
        assert_eq!(t.reaction_count(), 0);
    }

    /// A watch left open: what waits for an owner that never joins is forgotten after the
    /// cutoff, deleted members go, and the summary is the same whether or not every reaction
    /// is kept.
    #[test]
    fn what_a_long_watch_keeps_is_bounded() {
        let d = deployment(1, vec![write("kubectl", "", "2026-01-01T10:00:00Z", true, false)]);
        let (mut kept, mut lean) = (Tracker::keeping_reactions(&d), Tracker::new(&d));
        let mut rs = obj("ReplicaSet", "web-1", "2026-01-01T10:00:00Z");
        rs.controller_uid = Some(d.uid.clone());
        rs.writes = vec![write("kube-controller-manager", "", "2026-01-01T10:00:00Z", true, false)];
        for t in [&mut kept, &mut lean] {
            // The listed state of the namespace: an object of another chain waits, unlisted.
            let mut other = obj("Pod", "other-0", "2026-01-01T09:00:00Z");
            other.controller_uid = Some("another-rs".into());
            t.observe(&other, None);
            t.observe(&rs, at(0));
            // Churn: pods of the chain come and go, pods of another chain are updated.
            for i in 0..50 {
                let mut pod = obj("Pod", &format!("web-1-{i}"), "2026-01-01T10:00:00Z");
                pod.controller_uid = Some(rs.uid.clone());
                pod.writes = vec![write("kube-controller-manager", "", "2026-01-01T10:00:00Z", false, false)];
                assert_eq!(t.observe(&pod, at(100 * i + 10)).len(), 1);
                assert_eq!(t.removed(&pod.uid, at(100 * i + 50).unwrap()).len(), 1);
                // A late update of a deleted pod does not join it again.
                assert!(t.observe(&pod, at(100 * i + 60)).is_empty());
                let mut stranger = obj("Pod", &format!("other-{i}"), "2026-01-01T10:00:00Z");
                stranger.controller_uid = Some("another-rs".into());
                t.observe(&stranger, at(100 * i + 70));
            }
            assert_eq!(t.members.len(), 2, "the Deployment and its ReplicaSet");
            assert_eq!(t.pending["another-rs"].len(), 51);
            // Waiting since before the cutoff (and the listed state): forgotten.
            t.forget_waiting(at(100 * 25).unwrap());
            assert_eq!(t.pending["another-rs"].len(), 25);
            t.forget_waiting(at(100_000).unwrap());
            assert!(t.pending.is_empty() && t.pending_events.is_empty());
        }
        assert_eq!(kept.summary(), lean.summary());
        assert_eq!((kept.reaction_count(), lean.reaction_count()), (101, 101));
        assert_eq!((kept.reactions().len(), lean.reactions().len()), (101, 0));
    }

    /// A dependent that arrives before its owner, within the wait, still joins with it.
    #[test]
    fn an_owner_arriving_after_its_dependent_within_the_wait_still_takes_it() {
        let d = deployment(1, vec![write("kubectl", "", "2026-01-01T10:00:00Z", true, false)]);
        let mut t = Tracker::new(&d);
        let mut rs = obj("ReplicaSet", "web-2", "2026-01-01T10:01:00Z");
        rs.controller_uid = Some(d.uid.clone());
        let mut pod = obj("Pod", "web-2-a", "2026-01-01T10:01:00Z");
        pod.controller_uid = Some(rs.uid.clone());
        assert!(t.observe(&pod, at(40)).is_empty());
        t.forget_waiting(at(0).unwrap());
        assert_eq!(t.observe(&rs, at(50)).len(), 2);
        // An Event about an object that was deleted is not kept waiting.
        t.removed(&pod.uid, at(60).unwrap());
        let e = EventSnap { uid: "e".into(), object_uid: pod.uid.clone(), count: 1, ..Default::default() };
        assert!(t.event(&e, at(70)).is_empty());
        assert!(t.pending_events.is_empty());
        t.event_removed("e");
        assert!(t.events.is_empty());
    }
}
