//! One object's writes in time order, each with what it changed (where the log's level says)
//! and, for a write refused with 409 Conflict, the version the writer held and who wrote in
//! between. Pure: requests in (already in time order), rows out.

use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU64;
use std::sync::Arc;

use super::{Level, Micros, Request, Verb, Writer};

/// One write as the history shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub request: Request,
    pub what: What,
}

/// What a write did, as far as the log can tell.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct What {
    /// Field paths whose value this write changed (or set, where no earlier value is known).
    pub changed: Vec<Arc<str>>,
    /// Field paths sent with the value they already had.
    pub unchanged: usize,
    /// Field paths an update no longer sent (it removed them).
    pub removed: Vec<Arc<str>>,
    /// No earlier state of the object in the log: `changed` is everything sent.
    pub first_seen: bool,
    /// For a 409: the version the writer held and who wrote since.
    pub conflict: Option<Conflict>,
}

/// Why a write was refused with 409, as the writes around it say. Writers and credentials are
/// named as the caller keeps them: in full for one object's rows, by number in the findings.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict<W = Writer, C = Box<str>> {
    /// The resourceVersion the writer sent (create and update only).
    pub held: Option<u64>,
    /// Who wrote since the version the writer held (or, without one, since its own last
    /// write), earliest first, each once.
    pub since: Vec<W>,
    /// The writers in `since` that are this writer under another credential: another
    /// instance of it.
    pub other_instances: Vec<C>,
    /// An AlreadyExists refusal of a create.
    pub exists: bool,
}

impl<W: PartialEq, C> Conflict<W, C> {
    /// Nothing but the writer's own writes landed in between: its cache was stale.
    pub fn only_itself(&self, writer: &W) -> bool {
        self.other_instances.is_empty() && self.since.iter().all(|w| w == writer)
    }
}

/// A successful write kept to explain a later 409. Versions are never 0, which makes the
/// options free: the findings keep one of these per recent write of every object.
#[derive(Debug, Clone)]
struct Landed<W, C> {
    at: Micros,
    held: Option<NonZeroU64>,
    stored: Option<NonZeroU64>,
    writer: W,
    credential: Option<C>,
    create: bool,
}

/// The log's time is when an answer was written, not when its write was stored: the write a
/// 409 lost to may answer a little after the 409 does. Writes this much later still count.
pub const LOOKAHEAD: Micros = 1_000_000;

/// The successful writes of one object that a 409 may be explained by: the newest `keep`.
#[derive(Debug, Clone, Default)]
pub struct Recent<W = Writer, C = Box<str>> {
    landed: VecDeque<Landed<W, C>>,
}

impl Recent {
    /// What one object's rows keep: enough for any burst a person reads through.
    const KEEP: usize = 64;

    pub fn landed(&mut self, r: &Request) {
        self.push(r, r.writer.clone(), r.credential.clone(), Self::KEEP);
    }

    pub fn explain(&self, r: &Request) -> Conflict {
        self.explain_as(r, &r.writer, r.credential.as_ref())
    }
}

impl<W: Clone + PartialEq, C: Clone + PartialEq> Recent<W, C> {
    /// Keeps a successful write of `writer` (presenting `credential`), dropping the oldest
    /// beyond `keep`.
    pub fn push(&mut self, r: &Request, writer: W, credential: Option<C>, keep: usize) {
        if self.landed.len() >= keep {
            self.landed.pop_front();
        }
        self.landed.push_back(Landed {
            at: r.at,
            writer,
            credential,
            held: r.held.and_then(NonZeroU64::new),
            stored: r.stored.and_then(NonZeroU64::new),
            create: r.verb == Some(Verb::Create),
        });
    }

    /// Drops the writes answered before `at`, and the room they took.
    pub fn forget_before(&mut self, at: Micros) {
        let before = self.landed.len();
        while self.landed.front().is_some_and(|l| l.at < at) {
            self.landed.pop_front();
        }
        if self.landed.len() < before && self.landed.len() <= self.landed.capacity() / 4 {
            self.landed.shrink_to_fit();
        }
    }

    pub fn is_empty(&self) -> bool {
        self.landed.is_empty()
    }

    /// The writes that landed between the version `r` held and `r` itself (answered up to
    /// [`LOOKAHEAD`] after it): those stored past it, or made on top of it or a later one.
    /// Without a held version (a patch), those since the writer's own last write, else in the
    /// last minute. `writer` and `credential` are `r`'s, as this keeps them.
    pub fn explain_as(&self, r: &Request, writer: &W, credential: Option<&C>) -> Conflict<W, C> {
        let exists = r.verb == Some(Verb::Create);
        let before = self.landed.iter().filter(|l| l.at <= r.at + LOOKAHEAD);
        let since: Vec<&Landed<W, C>> = if exists {
            before.filter(|l| l.create).collect()
        } else if let Some(held) = r.held {
            before
                .filter(|l| l.stored.is_some_and(|s| s.get() > held) || l.held.is_some_and(|h| h.get() >= held))
                .collect()
        } else {
            let own = self.landed.iter().rposition(|l| l.at <= r.at && l.writer == *writer);
            let from = own.map(|i| i + 1).unwrap_or(0);
            self.landed.iter().skip(from).filter(|l| l.at <= r.at && l.at >= r.at - 60_000_000).collect()
        };
        let mut writers: Vec<W> = Vec::new();
        let mut other_instances: Vec<C> = Vec::new();
        for l in since {
            if !writers.contains(&l.writer) {
                writers.push(l.writer.clone());
            }
            if l.writer == *writer
                && let (Some(theirs), Some(mine)) = (&l.credential, credential)
                && theirs != mine
                && !other_instances.contains(theirs)
            {
                other_instances.push(theirs.clone());
            }
        }
        Conflict { held: r.held, since: writers, other_instances, exists }
    }
}

/// The rows of one object's requests (in time order).
pub fn rows(requests: Vec<Request>) -> Vec<Row> {
    let mut known: HashMap<Arc<str>, u64> = HashMap::new();
    let mut seen_body = false;
    let mut recent = Recent::default();
    let mut out: Vec<Row> = Vec::with_capacity(requests.len());
    // 409s wait until the writes answered just after them are in.
    let mut waiting: Vec<usize> = Vec::new();
    for r in requests {
        while let Some(&i) = waiting.first().filter(|&&i| out[i].request.at + LOOKAHEAD < r.at) {
            out[i].what.conflict = Some(recent.explain(&out[i].request));
            waiting.remove(0);
        }
        let mut what = What::default();
        if r.conflict() {
            waiting.push(out.len());
        } else if r.ok() && !r.dry_run {
            if let Some(body) = r.body.as_deref().filter(|_| r.level >= Level::Request) {
                what.first_seen = !seen_body;
                let sent: std::collections::HashSet<&str> = body.fields.iter().map(|(p, _)| &**p).collect();
                for (path, hash) in &body.fields {
                    match known.insert(path.clone(), *hash) {
                        Some(old) if old == *hash => what.unchanged += 1,
                        _ => what.changed.push(path.clone()),
                    }
                }
                // An update sends the whole object: what it no longer sends, it removed.
                if r.verb == Some(Verb::Update) && seen_body && r.subresource.is_empty() {
                    let gone: Vec<Arc<str>> =
                        known.keys().filter(|p| !sent.contains(&***p) && !p.starts_with(".status")).cloned().collect();
                    for p in gone {
                        known.remove(&p);
                        what.removed.push(p);
                    }
                    what.removed.sort();
                }
                seen_body = true;
            }
            if r.verb == Some(Verb::Delete) {
                known.clear();
                seen_body = false;
            }
            recent.landed(&r);
        }
        out.push(Row { request: r, what });
    }
    for i in waiting {
        out[i].what.conflict = Some(recent.explain(&out[i].request));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analyze::history::{Body, ObjectKey};

    pub fn writer(name: &str) -> Writer {
        Writer { user: format!("u-{name}").into(), program: name.into(), manager: None }
    }

    pub fn req(at_secs: i64, who: &str, verb: Verb, code: u16) -> Request {
        Request {
            at: at_secs * 1_000_000,
            verb: Some(verb),
            code,
            writer: writer(who),
            object: ObjectKey {
                group: "apps".into(),
                resource: "deployments".into(),
                namespace: "ns".into(),
                name: "web".into(),
            },
            ..Default::default()
        }
    }

    pub fn with_fields(mut r: Request, fields: &[(&str, u64)]) -> Request {
        r.level = Level::Request;
        r.body = Some(Box::new(Body {
            fields: fields.iter().map(|(p, h)| (Arc::from(*p), *h)).collect(),
            ..Default::default()
        }));
        r
    }

    #[test]
    fn each_write_says_what_it_changed() {
        let rows = rows(vec![
            with_fields(req(1, "gitops", Verb::Patch, 200), &[(".spec.replicas", 2), (".spec.paused", 0)]),
            with_fields(req(2, "hpa", Verb::Update, 200), &[(".spec.replicas", 5)]),
            with_fields(req(3, "gitops", Verb::Patch, 200), &[(".spec.replicas", 2), (".spec.paused", 0)]),
        ]);
        assert!(rows[0].what.first_seen);
        assert_eq!(rows[0].what.changed.len(), 2);
        assert_eq!(rows[1].what.changed, vec![Arc::from(".spec.replicas")]);
        assert_eq!(
            rows[1].what.removed,
            vec![Arc::from(".spec.paused")],
            "an update that no longer sends a field removed it"
        );
        assert_eq!((rows[2].what.changed.len(), rows[2].what.unchanged), (2, 0));
        // /scale sends a Scale object: replicas changed, nothing removed.
        let mut scale = with_fields(req(4, "hpa", Verb::Update, 200), &[(".spec.replicas", 7)]);
        scale.subresource = "scale".into();
        let rows = super::rows(vec![
            with_fields(req(1, "gitops", Verb::Patch, 200), &[(".spec.replicas", 2), (".spec.paused", 0)]),
            scale,
        ]);
        assert_eq!(rows[1].what.changed, vec![Arc::from(".spec.replicas")]);
        assert!(rows[1].what.removed.is_empty());
    }

    #[test]
    fn a_conflict_names_who_wrote_since_the_version_held() {
        let mut a = req(1, "kcm", Verb::Update, 200);
        a.held = Some(10);
        a.stored = Some(11);
        let mut b = req(2, "kubectl", Verb::Update, 200);
        b.held = Some(11);
        let mut lost = req(3, "operator", Verb::Update, 409);
        lost.held = Some(10);
        let rows = rows(vec![a, b, lost]);
        let c = rows[2].what.conflict.as_ref().unwrap();
        assert_eq!(c.held, Some(10));
        assert_eq!(c.since, vec![writer("kcm"), writer("kubectl")]);
        assert!(!c.only_itself(&writer("operator")));
    }

    #[test]
    fn the_write_a_conflict_lost_to_may_answer_just_after_it() {
        let mut lost = req(1, "b", Verb::Update, 409);
        lost.held = Some(10);
        let mut won = req(1, "a", Verb::Update, 200);
        (won.at, won.held) = (won.at + 3_000, Some(10));
        let mut later = req(5, "c", Verb::Update, 200);
        later.held = Some(11);
        let rows = rows(vec![lost, won, later]);
        assert_eq!(rows[0].what.conflict.as_ref().unwrap().since, vec![writer("a")]);
    }

    #[test]
    fn a_writer_refused_after_only_its_own_writes_had_a_stale_cache() {
        let mut mine = req(1, "operator", Verb::Update, 200);
        mine.held = Some(10);
        let mut lost = req(2, "operator", Verb::Update, 409);
        lost.held = Some(10);
        let rows = rows(vec![mine, lost]);
        assert!(rows[1].what.conflict.as_ref().unwrap().only_itself(&writer("operator")));
    }

    #[test]
    fn another_instance_of_the_same_writer_is_told_by_its_credential() {
        let mut one = req(1, "kube-controller-manager", Verb::Update, 200);
        (one.held, one.credential) = (Some(10), Some("JTI=aaaa".into()));
        let mut other = req(2, "kube-controller-manager", Verb::Update, 409);
        (other.held, other.credential) = (Some(10), Some("JTI=bbbb".into()));
        let rows = rows(vec![one, other]);
        let c = rows[1].what.conflict.as_ref().unwrap();
        assert_eq!(c.other_instances, vec![Box::from("JTI=aaaa")]);
        assert!(!c.only_itself(&writer("kube-controller-manager")));
    }

    #[test]
    fn a_refused_create_names_the_creator() {
        let rows = rows(vec![req(1, "a", Verb::Create, 201), req(2, "b", Verb::Create, 409)]);
        let c = rows[1].what.conflict.as_ref().unwrap();
        assert!(c.exists);
        assert_eq!(c.since, vec![writer("a")]);
    }
}
