//! Findings over a window of the audit log, fed one request at a time (in time order) with
//! state per object written, never per request, so memory grows with the objects written,
//! not with the log:
//!
//! - fight: two writers alternately changing the same field (Request level and above: a
//!   value's hash tells a change from a rewrite), or, at Metadata level, alternately writing the
//!   same object through the same part of it (the main resource or /scale; /status): the weaker
//!   evidence, said as such;
//! - conflicts: updates refused with 409, per writer and object, with who wrote in between
//!   (itself alone: a stale cache; itself under another credential: another instance);
//! - hot loop: one writer writing one object at least R times a minute for M minutes;
//! - leadership, per Lease: its holders in order, takeovers, renewal gaps longer than the
//!   lease's duration, and two holders renewing it in turn (two leaders);
//! - reaction lags: per kind written and writer that reacted, the time from a write of an
//!   object to that writer's first write of an object it owns.

// hashbrown's foldhash, seeded per process: several lookups per write, on every write.
use hashbrown::{HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;

use super::timeline::{LOOKAHEAD, Recent};
use super::{Area, Level, Micros, ObjectKey, Request, Verb, Writer, clock, timestamp};

/// The thresholds of the findings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Alternations between two writers that make a fight.
    pub fight_min: u32,
    /// 409s of one writer on one object that make a finding.
    pub conflict_min: u32,
    /// Writes a minute, for `hot_minutes` minutes in a row, that make a hot loop.
    pub hot_per_minute: u32,
    pub hot_minutes: u32,
    /// Takeovers of one Lease that make churn.
    pub churn_min: u32,
    /// A reaction slower than this at the 90th percentile is a finding.
    pub slow_reaction: Micros,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            fight_min: 6,
            conflict_min: 3,
            hot_per_minute: 30,
            hot_minutes: 3,
            churn_min: 3,
            slow_reaction: 30_000_000,
        }
    }
}

type WriterId = u32;
type CredentialId = u32;
type ObjectId = u32;

/// No writer: an area nobody wrote yet.
const NOBODY: WriterId = WriterId::MAX;

/// A successful write is kept this long to explain a later 409 (a writer whose cache is
/// older than this is told against the writes it still finds), at most [`KEEP_WRITES`] of
/// them per object.
const KEEP_FOR: Micros = 600_000_000;
const KEEP_WRITES: usize = 16;

/// A reaction is a write within this long of the write it reacts to.
const REACTION_WITHIN: Micros = 600_000_000;

/// What a fight is over: one field, or (Metadata level) one part of the object.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Target {
    Field(Arc<str>),
    Area(Area),
}

#[derive(Debug, Clone, Copy, Default)]
struct Span {
    count: u32,
    first: Micros,
    last: Micros,
}

impl Span {
    fn add(&mut self, at: Micros) {
        if self.count == 0 {
            self.first = at;
        }
        self.count += 1;
        self.last = at;
    }
}

#[derive(Debug, Default)]
struct Refusals {
    span: Span,
    since: Vec<WriterId>,
    other_instances: Vec<CredentialId>,
    /// Refusals after which only the writer's own writes had landed.
    only_itself: u32,
    exists: u32,
}

/// Writes a minute of one writer on one object; the runs of hot minutes only once a minute
/// was hot (most writers never write an object 30 times a minute).
#[derive(Debug, Default)]
struct Rate {
    minute: i64,
    count: u32,
    refused: u32,
    runs: Option<Box<Runs>>,
}

#[derive(Debug, Default)]
struct Runs {
    /// The run of hot minutes going on, and the longest so far.
    run: Option<Run>,
    best: Option<Run>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Run {
    start: i64,
    minutes: u32,
    writes: u64,
    refused: u64,
    peak: u32,
}

#[derive(Debug, Default)]
struct LeaseLog {
    writes: u64,
    holder: Option<Arc<str>>,
    holder_since: Micros,
    last: Option<(Micros, Arc<str>)>,
    /// The holder before the current one, and when it last wrote.
    previous: Option<(Arc<str>, Micros)>,
    duration: Option<i32>,
    takeovers: Vec<(Micros, Arc<str>, Arc<str>)>,
    gaps: Vec<(Micros, Micros, bool)>,
    interleaved: u32,
    holders: Vec<Arc<str>>,
}

/// What is kept of every object written: a few words. The rest lives behind boxes that
/// exist only while the object is being written ([`Active`]) or once it shows something a
/// finding is made of ([`Extra`]); [`Accumulator::sweep`] frees what has gone quiet, so memory
/// follows the objects written, not the log's length.
#[derive(Debug)]
struct ObjectState {
    /// The last writer of the main resource (or /scale) and of /status: Metadata-level fights.
    areas: [WriterId; 2],
    /// The last write that asks the controllers of its owned objects to act: when, by whom
    /// (NOBODY: none in the last [`REACTION_WITHIN`]).
    trigger_at: Micros,
    trigger_by: WriterId,
    /// Its group and resource, as [`Names::kinds`] numbers them.
    kind: u16,
    active: Option<Box<Active>>,
    extra: Option<Box<Extra>>,
}

impl Default for ObjectState {
    fn default() -> ObjectState {
        ObjectState { areas: [NOBODY; 2], trigger_at: 0, trigger_by: NOBODY, kind: 0, active: None, extra: None }
    }
}

/// The recent writes (for 409s) and this minute's rates (for hot loops).
#[derive(Debug, Default)]
struct Active {
    recent: Recent<WriterId, CredentialId>,
    rates: Vec<(WriterId, Rate)>,
}

#[derive(Debug, Default)]
struct Extra {
    /// Field by field (Request level and above): the last writer and its value's hash.
    fields: HashMap<Arc<str>, (WriterId, u64)>,
    pairs: HashMap<(Target, WriterId, WriterId), Span>,
    refusals: HashMap<WriterId, Refusals>,
    lease: Option<LeaseLog>,
    /// Writers that reacted to the current trigger already.
    reacted: Vec<WriterId>,
    /// 409s waiting for the writes answered just after them (see timeline::LOOKAHEAD).
    waiting: Vec<(Request, WriterId, Option<CredentialId>)>,
}

impl ObjectState {
    fn extra(&mut self) -> &mut Extra {
        self.extra.get_or_insert_with(Box::default)
    }

    fn active(&mut self) -> &mut Active {
        self.active.get_or_insert_with(Box::default)
    }

    /// Explains and counts the 409s answered before `now - LOOKAHEAD`.
    fn settle(&mut self, now: Option<Micros>) {
        let Some(extra) = self.extra.as_deref_mut() else { return };
        while let Some(first) = extra.waiting.first()
            && now.is_none_or(|now| first.0.at + LOOKAHEAD < now)
        {
            let (r, writer, credential) = extra.waiting.remove(0);
            let explained = match self.active.as_deref() {
                Some(active) => active.recent.explain_as(&r, &writer, credential.as_ref()),
                None => Recent::<WriterId, CredentialId>::default().explain_as(&r, &writer, credential.as_ref()),
            };
            let refusals = extra.refusals.entry(writer).or_default();
            refusals.span.add(r.at);
            refusals.exists += u32::from(explained.exists);
            if explained.only_itself(&writer) && !explained.exists {
                refusals.only_itself += 1;
            }
            for w in explained.since {
                if !refusals.since.contains(&w) {
                    refusals.since.push(w);
                }
            }
            for c in explained.other_instances {
                if !refusals.other_instances.contains(&c) {
                    refusals.other_instances.push(c);
                }
            }
        }
    }
}

/// Reaction times of one writer to writes of one kind, kept as a bounded sample.
#[derive(Debug, Default, Clone)]
struct Samples {
    n: u64,
    millis: Vec<u32>,
    seed: u64,
}

impl Samples {
    const KEEP: usize = 4096;

    fn add(&mut self, lag: Micros) {
        self.n += 1;
        let ms = (lag / 1000).clamp(0, u32::MAX as i64) as u32;
        if self.millis.len() < Self::KEEP {
            self.millis.push(ms);
            return;
        }
        // Reservoir sampling with a fixed-seed generator: the same log, the same figures.
        self.seed = self.seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let at = (self.seed >> 33) % self.n;
        if (at as usize) < Self::KEEP {
            self.millis[at as usize] = ms;
        }
    }
}

/// Small numbers for what repeats: writers, credentials, objects, and one copy of each
/// group, resource and namespace name.
#[derive(Default)]
struct Names {
    writers: Vec<Writer>,
    writer_ids: HashMap<Writer, WriterId>,
    credentials: Vec<Box<str>>,
    credential_ids: HashMap<Box<str>, CredentialId>,
    words: HashSet<Arc<str>>,
    objects: HashMap<ObjectKey, ObjectId>,
    /// Group and resource pairs.
    kinds: Vec<(Arc<str>, Arc<str>)>,
}

impl Names {
    fn writer(&mut self, w: &Writer) -> WriterId {
        if let Some(&id) = self.writer_ids.get(w) {
            return id;
        }
        let id = self.writers.len() as WriterId;
        self.writers.push(w.clone());
        self.writer_ids.insert(w.clone(), id);
        id
    }

    fn credential(&mut self, c: &str) -> CredentialId {
        if let Some(&id) = self.credential_ids.get(c) {
            return id;
        }
        let id = self.credentials.len() as CredentialId;
        self.credentials.push(c.into());
        self.credential_ids.insert(c.into(), id);
        id
    }

    fn word(&mut self, w: &Arc<str>) -> Arc<str> {
        if let Some(known) = self.words.get(w) {
            return known.clone();
        }
        self.words.insert(w.clone());
        w.clone()
    }

    /// The object's number, and its kind's number when it is new.
    fn object(&mut self, key: &ObjectKey) -> (ObjectId, Option<u16>) {
        if let Some(&id) = self.objects.get(key) {
            return (id, None);
        }
        let kind = match self.kinds.iter().position(|(g, r)| *g == key.group && *r == key.resource) {
            Some(at) => at,
            None => {
                let kind = (self.word(&key.group), self.word(&key.resource));
                self.kinds.push(kind);
                self.kinds.len() - 1
            }
        };
        let id = self.objects.len() as ObjectId;
        let key = ObjectKey {
            group: self.word(&key.group),
            resource: self.word(&key.resource),
            namespace: self.word(&key.namespace),
            name: key.name.clone(),
        };
        self.objects.insert(key, id);
        (id, Some(kind.min(u16::MAX as usize) as u16))
    }
}

/// The findings' state over the requests seen so far.
pub struct Accumulator {
    settings: Settings,
    names: Names,
    states: Vec<ObjectState>,
    uids: HashMap<u128, ObjectId>,
    /// Owners learned from the log's bodies, and known from elsewhere (the live cluster).
    owners: HashMap<ObjectId, ObjectId>,
    known_owners: HashMap<ObjectKey, ObjectKey>,
    durations: HashMap<ObjectKey, i32>,
    lags: HashMap<(Arc<str>, Arc<str>, WriterId), Samples>,
    /// When the next sweep is due: log time, and the writes since the last one.
    next_sweep: Micros,
    since_sweep: usize,
    pub levels: [u64; 3],
    pub writes: u64,
    pub first: Option<Micros>,
    pub last: Option<Micros>,
}

impl Accumulator {
    pub fn new(settings: Settings) -> Accumulator {
        Accumulator {
            settings,
            names: Names::default(),
            states: Vec::new(),
            uids: HashMap::new(),
            owners: HashMap::new(),
            known_owners: HashMap::new(),
            durations: HashMap::new(),
            lags: HashMap::new(),
            next_sweep: Micros::MIN,
            since_sweep: 0,
            levels: [0; 3],
            writes: 0,
            first: None,
            last: None,
        }
    }

    /// Owners known from elsewhere (the live cluster's ownerReferences): child -> owner.
    pub fn know_owners(&mut self, owners: impl IntoIterator<Item = (ObjectKey, ObjectKey)>) {
        self.known_owners.extend(owners);
    }

    /// Lease durations known from elsewhere (the live Leases), for the renewal gaps of a log
    /// whose level does not show them.
    pub fn know_durations(&mut self, durations: impl IntoIterator<Item = (ObjectKey, i32)>) {
        self.durations.extend(durations);
    }

    fn owner_of(&self, id: ObjectId, key: &ObjectKey) -> Option<ObjectId> {
        self.owners
            .get(&id)
            .copied()
            .or_else(|| self.known_owners.get(key).and_then(|owner| self.names.objects.get(owner)).copied())
    }

    /// Takes one request (in time order). Reads and dry runs are not looked at.
    pub fn observe(&mut self, r: &Request) {
        if r.dry_run || !r.verb.is_some_and(Verb::writes) || r.object.is_event() || r.object.name.is_empty() {
            return;
        }
        self.writes += 1;
        self.levels[r.level as usize] += 1;
        self.first.get_or_insert(r.at);
        self.last = Some(self.last.map_or(r.at, |l| l.max(r.at)));
        self.since_sweep += 1;
        if r.at >= self.next_sweep && self.since_sweep >= self.states.len() {
            self.sweep(r.at);
        }
        let (id, new) = self.names.object(&r.object);
        if let Some(kind) = new {
            self.states.push(ObjectState { kind, ..ObjectState::default() });
        }
        if let Some(uid) = &r.uid {
            self.uids.entry(super::id_number(uid)).or_insert(id);
        }
        let writer = self.names.writer(&r.writer);
        let credential = r.credential.as_deref().map(|c| self.names.credential(c));
        let settings = self.settings;
        if let Some(body) = &r.body {
            for (_, _, uid) in &body.owners {
                if let Some(&owner) = self.uids.get(&super::id_number(uid)) {
                    self.owners.entry(id).or_insert(owner);
                }
            }
        }
        let owner = self.owner_of(id, &r.object);
        let state = &mut self.states[id as usize];
        if !r.object.is_lease() {
            let rates = &mut state.active().rates;
            let at = match rates.iter().position(|(w, _)| *w == writer) {
                Some(at) => at,
                None => {
                    rates.push((writer, Rate::default()));
                    rates.len() - 1
                }
            };
            rates[at].1.observe(r, &settings);
        }
        state.settle(Some(r.at));
        if r.conflict() {
            state.extra().waiting.push((r.clone(), writer, credential));
            return;
        }
        if !r.ok() {
            return;
        }
        state.active().recent.push(r, writer, credential, KEEP_WRITES);
        if r.object.is_lease() {
            let known_duration = self.durations.get(&r.object).copied();
            state.extra().lease.get_or_insert_with(LeaseLog::default).observe(r, known_duration);
            return;
        }
        if r.verb == Some(Verb::Delete) {
            if let Some(extra) = state.extra.as_deref_mut() {
                extra.fields.clear();
            }
            state.areas = [NOBODY; 2];
            return;
        }
        // Fights: field by field where the body says what changed, else part by part.
        match r.body.as_deref().filter(|_| r.level >= Level::Request && r.area() != Area::Other) {
            Some(body) => {
                let extra = state.extra();
                for (path, hash) in &body.fields {
                    let before = extra.fields.insert(path.clone(), (writer, *hash));
                    if let Some((other, old)) = before
                        && other != writer
                        && old != *hash
                    {
                        let (a, b) = (other.min(writer), other.max(writer));
                        extra.pairs.entry((Target::Field(path.clone()), a, b)).or_default().add(r.at);
                    }
                }
            }
            None if r.area() != Area::Other && r.verb != Some(Verb::Create) => {
                let area = r.area();
                let other = std::mem::replace(&mut state.areas[area as usize], writer);
                if other != NOBODY && other != writer {
                    let (a, b) = (other.min(writer), other.max(writer));
                    state.extra().pairs.entry((Target::Area(area), a, b)).or_default().add(r.at);
                }
            }
            None => {}
        }
        if r.area() == Area::Spec && matches!(r.verb, Some(Verb::Create | Verb::Update | Verb::Patch)) {
            state.trigger_at = r.at;
            state.trigger_by = writer;
            if let Some(extra) = state.extra.as_deref_mut() {
                extra.reacted.clear();
            }
        }
        // A reaction: the first write by another writer to an object the triggered one owns.
        if let Some(owner) = owner
            && let owner_state = &mut self.states[owner as usize]
            && owner_state.trigger_by != NOBODY
            && owner_state.trigger_by != writer
            && r.at - owner_state.trigger_at <= REACTION_WITHIN
            && !owner_state.extra.as_deref().is_some_and(|e| e.reacted.contains(&writer))
        {
            owner_state.extra().reacted.push(writer);
            let lag = r.at - owner_state.trigger_at;
            let (group, resource) = &self.names.kinds[usize::from(owner_state.kind)];
            self.lags.entry((group.clone(), resource.clone(), writer)).or_default().add(lag);
        }
    }

    /// Frees what can no longer make a finding: writes older than [`KEEP_FOR`] (after the
    /// 409s waiting on them are told), rates of writers gone quiet without a hot run worth
    /// reporting, triggers too old to be reacted to. Run at most once a minute of log time and
    /// once per as many writes as there are objects, so it costs O(1) per write.
    fn sweep(&mut self, now: Micros) {
        self.next_sweep = now + 60_000_000;
        self.since_sweep = 0;
        let s = self.settings;
        let minute = now.div_euclid(60_000_000);
        for state in &mut self.states {
            state.settle(Some(now));
            if state.trigger_by != NOBODY && now - state.trigger_at > REACTION_WITHIN {
                state.trigger_by = NOBODY;
                if let Some(extra) = state.extra.as_deref_mut() {
                    extra.reacted = Vec::new();
                }
            }
            let Some(active) = state.active.as_deref_mut() else { continue };
            active.recent.forget_before(now - KEEP_FOR);
            active.rates.retain_mut(|(_, rate)| {
                if rate.minute >= minute - 1 {
                    return true;
                }
                rate.close(&s);
                rate.runs.as_ref().is_some_and(|runs| runs.best.is_some_and(|b| b.minutes >= s.hot_minutes))
            });
            if active.recent.is_empty() && active.rates.is_empty() {
                state.active = None;
            }
        }
    }

    /// The findings, and the reaction lags, over everything observed.
    pub fn finish(mut self) -> Report {
        for state in &mut self.states {
            state.settle(None);
        }
        let mut by_resource: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
        for key in self.names.objects.keys() {
            *by_resource.entry(resource_name(key)).or_default() += 1;
        }
        let s = self.settings;
        let mut report = Report {
            writes: self.writes,
            objects: by_resource,
            levels: self.levels,
            first: self.first.map(timestamp),
            last: self.last.map(timestamp),
            ..Default::default()
        };
        let writers = &self.names.writers;
        let label = |id: WriterId| writers[id as usize].label();
        let mut objects: Vec<(ObjectKey, ObjectId)> = self.names.objects.drain().collect();
        objects.sort_by(|a, b| a.0.cmp(&b.0));
        for (key, id) in objects {
            let state = &mut self.states[id as usize];
            let mut extra = state.extra.take().map(|e| *e).unwrap_or_default();
            let mut rates = state.active.take().map(|a| a.rates).unwrap_or_default();
            // Fights: per pair of writers, the target alternated most, and every target that
            // reached the threshold.
            let mut by_pair: HashMap<(WriterId, WriterId), Vec<(Target, Span)>> = HashMap::new();
            for ((target, a, b), span) in extra.pairs.drain() {
                by_pair.entry((a, b)).or_default().push((target, span));
            }
            let mut pairs: Vec<_> = by_pair.into_iter().collect();
            pairs.sort_by_key(|((a, b), _)| (label(*a), label(*b)));
            for ((a, b), mut targets) in pairs {
                targets.sort_by(|x, y| y.1.count.cmp(&x.1.count).then(x.0.cmp(&y.0)));
                let Some((_, top)) = targets.first() else { continue };
                if top.count < s.fight_min {
                    continue;
                }
                let top = *top;
                let fields: Vec<String> = targets
                    .iter()
                    .filter(|(_, sp)| sp.count >= s.fight_min)
                    .map(|(t, _)| match t {
                        Target::Field(p) => p.to_string(),
                        Target::Area(area) => area_name(*area).to_string(),
                    })
                    .collect();
                let by_field = targets.iter().any(|(t, _)| matches!(t, Target::Field(_)));
                report.fights.push(Fight {
                    object: object_ref(&key),
                    writers: [label(a), label(b)],
                    fields,
                    evidence: if by_field { Evidence::Field } else { Evidence::Object },
                    alternations: top.count,
                    first: timestamp(top.first),
                    last: timestamp(top.last),
                });
            }
            let mut refusals: Vec<(WriterId, Refusals)> = extra.refusals.drain().collect();
            refusals.sort_by_key(|(w, _)| label(*w));
            for (w, r) in refusals {
                if r.span.count < s.conflict_min {
                    continue;
                }
                report.conflicts.push(Conflicts {
                    object: object_ref(&key),
                    writer: label(w),
                    user: writers[w as usize].user.to_string(),
                    refused: r.span.count,
                    already_exists: r.exists,
                    first: timestamp(r.span.first),
                    last: timestamp(r.span.last),
                    written_since: r.since.iter().map(|&id| label(id)).collect(),
                    other_instances: r
                        .other_instances
                        .iter()
                        .map(|&c| self.names.credentials[c as usize].to_string())
                        .collect(),
                    stale_cache: r.only_itself == r.span.count - r.exists
                        && r.other_instances.is_empty()
                        && r.exists < r.span.count,
                });
            }
            rates.sort_by_key(|(w, _)| label(*w));
            for (w, mut rate) in rates {
                rate.close(&s);
                if let Some(run) = rate.runs.and_then(|runs| runs.best).filter(|run| run.minutes >= s.hot_minutes) {
                    report.hot_loops.push(HotLoop {
                        object: object_ref(&key),
                        writer: label(w),
                        minutes: run.minutes,
                        writes: run.writes,
                        refused: run.refused,
                        peak_per_minute: run.peak,
                        from: timestamp(run.start * 60_000_000),
                        until: timestamp((run.start + i64::from(run.minutes)) * 60_000_000),
                    });
                }
            }
            if let Some(lease) = extra.lease.take() {
                let churn = lease.takeovers.len() as u32 >= s.churn_min;
                if churn || !lease.gaps.is_empty() || lease.interleaved >= 2 {
                    let hours = lease.takeovers.iter().fold(HashMap::<i64, u32>::new(), |mut m, (at, ..)| {
                        *m.entry(at.div_euclid(3_600_000_000)).or_default() += 1;
                        m
                    });
                    report.leadership.push(Leadership {
                        object: object_ref(&key),
                        renewals: lease.writes,
                        holders: lease.holders.iter().map(|h| h.to_string()).collect(),
                        takeovers: lease
                            .takeovers
                            .iter()
                            .map(|(at, from, to)| Takeover {
                                at: timestamp(*at),
                                from: from.to_string(),
                                to: to.to_string(),
                            })
                            .collect(),
                        most_in_an_hour: hours.values().copied().max().unwrap_or(0),
                        duration_seconds: lease.duration,
                        gaps: lease
                            .gaps
                            .iter()
                            .map(|&(at, gap, same)| Gap {
                                at: timestamp(at),
                                seconds: gap as f64 / 1e6,
                                same_holder: same,
                            })
                            .collect(),
                        interleaved: lease.interleaved,
                        churn,
                    });
                }
            }
        }
        let mut lags: Vec<Lags> = self
            .lags
            .drain()
            .map(|((group, resource, w), mut samples)| {
                samples.millis.sort_unstable();
                let pct = |p: f64| {
                    let i = ((samples.millis.len() as f64 - 1.0) * p).round() as usize;
                    samples.millis.get(i).copied().unwrap_or(0)
                };
                Lags {
                    written: if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") },
                    writer: writers[w as usize].label(),
                    reactions: samples.n,
                    p50_millis: pct(0.5),
                    p90_millis: pct(0.9),
                    p99_millis: pct(0.99),
                    max_millis: samples.millis.last().copied().unwrap_or(0),
                }
            })
            .collect();
        lags.sort_by(|a, b| (&a.written, &a.writer).cmp(&(&b.written, &b.writer)));
        report.slow = lags
            .iter()
            .filter(|l| i64::from(l.p90_millis) * 1000 > s.slow_reaction && l.reactions >= 5)
            .cloned()
            .collect();
        report.lags = lags;
        report
    }
}

/// "deployments.apps", "leases.coordination.k8s.io", "pods".
fn resource_name(key: &ObjectKey) -> String {
    if key.group.is_empty() { key.resource.to_string() } else { format!("{}.{}", key.resource, key.group) }
}

fn area_name(area: Area) -> &'static str {
    match area {
        Area::Spec => "the main resource (or /scale)",
        Area::Status => "/status",
        Area::Other => "a subresource",
    }
}

impl Rate {
    fn observe(&mut self, r: &Request, s: &Settings) {
        let minute = r.at.div_euclid(60_000_000);
        if self.count > 0 && minute != self.minute {
            self.close_minute(s, minute);
        }
        if self.count == 0 {
            self.minute = minute;
        }
        self.count += 1;
        self.refused += u32::from(!r.ok());
    }

    /// Ends the current minute; `next` is the minute of the write that ended it.
    fn close_minute(&mut self, s: &Settings, next: i64) {
        if self.count >= s.hot_per_minute {
            let runs = self.runs.get_or_insert_with(Box::default);
            let run = runs.run.get_or_insert(Run { start: self.minute, ..Run::default() });
            run.minutes += 1;
            run.writes += u64::from(self.count);
            run.refused += u64::from(self.refused);
            run.peak = run.peak.max(self.count);
            let run = *run;
            if runs.best.is_none_or(|b| run.minutes > b.minutes || (run.minutes == b.minutes && run.writes > b.writes))
            {
                runs.best = Some(run);
            }
            if next != self.minute + 1 {
                runs.run = None;
            }
        } else if let Some(runs) = self.runs.as_deref_mut() {
            runs.run = None;
        }
        self.count = 0;
        self.refused = 0;
    }

    fn close(&mut self, s: &Settings) {
        if self.count > 0 {
            self.close_minute(s, self.minute + 2);
        }
    }
}

impl LeaseLog {
    fn observe(&mut self, r: &Request, known_duration: Option<i32>) {
        self.writes += 1;
        let body = r.body.as_deref();
        if let Some(d) = body.and_then(|b| b.lease_seconds).or(known_duration) {
            self.duration = Some(d);
        }
        // The holder as the body says, else the writer and its credential.
        let holder: Arc<str> = match body.and_then(|b| b.holder.as_deref()) {
            Some("") => return, // released
            Some(h) => h.into(),
            None => match &r.credential {
                Some(c) => format!("{} [{c}]", r.writer.label()).into(),
                None => r.writer.label().into(),
            },
        };
        if let (Some((last_at, last_holder)), Some(d)) = (&self.last, self.duration) {
            let gap = r.at - last_at;
            if gap > i64::from(d) * 1_000_000 {
                self.gaps.push((*last_at, gap, **last_holder == *holder));
            }
        }
        if !self.holders.contains(&holder) {
            self.holders.push(holder.clone());
        }
        match &self.holder {
            Some(current) if *current == holder => {}
            Some(current) => {
                let window = i64::from(self.duration.unwrap_or(60)) * 1_000_000;
                // Back to the holder before, while the one that took over was renewing: both lead.
                if let Some((before, before_at)) = &self.previous
                    && *before == holder
                    && r.at - *before_at <= window
                    && r.at - self.holder_since <= window
                {
                    self.interleaved += 1;
                }
                let last_write = self.last.as_ref().map_or(r.at, |(at, _)| *at);
                self.takeovers.push((r.at, current.clone(), holder.clone()));
                self.previous = Some((current.clone(), last_write));
                self.holder = Some(holder.clone());
                self.holder_since = r.at;
            }
            None => {
                self.holder = Some(holder.clone());
                self.holder_since = r.at;
            }
        }
        self.last = Some((r.at, holder));
    }
}

/// What the findings name an object by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    pub resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
}

impl ObjectRef {
    pub fn label(&self) -> String {
        if self.group.is_empty() {
            format!("{}/{}", self.resource, self.name)
        } else {
            format!("{}.{}/{}", self.resource, self.group, self.name)
        }
    }
}

fn object_ref(key: &ObjectKey) -> ObjectRef {
    ObjectRef {
        group: key.group.to_string(),
        resource: key.resource.to_string(),
        namespace: key.namespace.to_string(),
        name: key.name.to_string(),
    }
}

/// How strong a fight's evidence is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Evidence {
    /// The same field changed by each in turn (Request level and above).
    Field,
    /// The same part of the object written by each in turn (Metadata level): weaker.
    Object,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Fight {
    pub object: ObjectRef,
    pub writers: [String; 2],
    /// The fields (or, at Metadata level, the parts of the object) they took from each other.
    pub fields: Vec<String>,
    pub evidence: Evidence,
    pub alternations: u32,
    pub first: jiff::Timestamp,
    pub last: jiff::Timestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Conflicts {
    pub object: ObjectRef,
    pub writer: String,
    /// The user it wrote as.
    pub user: String,
    /// Writes refused with 409.
    pub refused: u32,
    /// Of them, creates refused because the object existed.
    pub already_exists: u32,
    pub first: jiff::Timestamp,
    pub last: jiff::Timestamp,
    /// Who wrote between the version the writer held and its refused write.
    pub written_since: Vec<String>,
    /// Credentials of the same writer that wrote in between: another instance of it.
    pub other_instances: Vec<String>,
    /// Only its own writes landed in between: it wrote from a stale cache.
    pub stale_cache: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HotLoop {
    pub object: ObjectRef,
    pub writer: String,
    pub minutes: u32,
    pub writes: u64,
    pub refused: u64,
    pub peak_per_minute: u32,
    pub from: jiff::Timestamp,
    pub until: jiff::Timestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Takeover {
    pub at: jiff::Timestamp,
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Gap {
    /// The last renewal before the gap.
    pub at: jiff::Timestamp,
    pub seconds: f64,
    /// The same holder renewed after it: it went on leading with its lease expired.
    pub same_holder: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Leadership {
    pub object: ObjectRef,
    pub renewals: u64,
    /// Every holder, in the order they first held it.
    pub holders: Vec<String>,
    pub takeovers: Vec<Takeover>,
    pub most_in_an_hour: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_seconds: Option<i32>,
    pub gaps: Vec<Gap>,
    /// Times a holder renewed again while the one that took over from it was renewing.
    pub interleaved: u32,
    /// At least the churn threshold of takeovers.
    #[serde(skip)]
    pub churn: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Lags {
    /// The resource whose write was reacted to (deployments.apps).
    pub written: String,
    pub writer: String,
    pub reactions: u64,
    pub p50_millis: u32,
    pub p90_millis: u32,
    pub p99_millis: u32,
    pub max_millis: u32,
}

/// Everything the findings say over a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub writes: u64,
    /// Objects written, by resource.
    pub objects: std::collections::BTreeMap<String, usize>,
    /// Writes logged at Metadata, Request and RequestResponse level.
    pub levels: [u64; 3],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<jiff::Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<jiff::Timestamp>,
    pub fights: Vec<Fight>,
    pub conflicts: Vec<Conflicts>,
    pub hot_loops: Vec<HotLoop>,
    pub leadership: Vec<Leadership>,
    pub lags: Vec<Lags>,
    /// Reactions slower than the threshold at the 90th percentile.
    #[serde(skip)]
    pub slow: Vec<Lags>,
}

/// "every ~33s": the mean time between `count` events from `first` to `last`.
pub fn every(first: jiff::Timestamp, last: jiff::Timestamp, count: u32) -> String {
    if count < 2 {
        return String::new();
    }
    let micros = (last.as_microsecond() - first.as_microsecond()) / i64::from(count - 1);
    format!(", about every {}", crate::age::precise(std::time::Duration::from_micros(micros.max(0) as u64)))
}

/// "15:04:05.123" of a timestamp (UTC).
pub fn at(t: jiff::Timestamp) -> String {
    clock(t.as_microsecond(), false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::history::Body;
    use crate::analyze::history::timeline::tests::{req, with_fields, writer};

    fn run(requests: Vec<Request>) -> Report {
        let mut acc = Accumulator::new(Settings {
            fight_min: 4,
            conflict_min: 2,
            hot_per_minute: 10,
            hot_minutes: 2,
            churn_min: 2,
            ..Settings::default()
        });
        for r in &requests {
            acc.observe(r);
        }
        acc.finish()
    }

    #[test]
    fn an_autoscaler_and_an_applier_fight_over_replicas() {
        let mut requests = Vec::new();
        for i in 0..5 {
            requests.push(with_fields(
                req(i * 30, "gitops", Verb::Patch, 200),
                &[(".spec.replicas", 2), (".spec.template", 9)],
            ));
            let mut scale = with_fields(req(i * 30 + 10, "hpa", Verb::Update, 200), &[(".spec.replicas", 5)]);
            scale.subresource = "scale".into();
            requests.push(scale);
        }
        let report = run(requests);
        assert_eq!(report.fights.len(), 1, "{report:#?}");
        let f = &report.fights[0];
        assert_eq!(f.fields, vec![".spec.replicas"]);
        assert_eq!(f.alternations, 9);
        assert_eq!(f.evidence, Evidence::Field);
        assert_eq!(f.writers, ["gitops (u-gitops)".to_string(), "hpa (u-hpa)".to_string()]);
    }

    #[test]
    fn rewriting_the_same_value_is_no_fight_and_metadata_level_is_weaker_evidence() {
        let same: Vec<Request> = (0..10)
            .map(|i| {
                with_fields(req(i, if i % 2 == 0 { "a" } else { "b" }, Verb::Patch, 200), &[(".spec.replicas", 3)])
            })
            .collect();
        assert!(run(same).fights.is_empty());
        let bare: Vec<Request> =
            (0..10).map(|i| req(i, if i % 2 == 0 { "a" } else { "b" }, Verb::Update, 200)).collect();
        let report = run(bare);
        assert_eq!(report.fights[0].evidence, Evidence::Object);
        assert_eq!(report.fights[0].alternations, 9);
    }

    #[test]
    fn conflicts_are_counted_with_who_wrote_between() {
        let mut requests = Vec::new();
        for i in 0..3 {
            let mut landed = req(i * 10, "kcm", Verb::Update, 200);
            (landed.held, landed.stored) = (Some(100 + i as u64), Some(101 + i as u64));
            let mut lost = req(i * 10 + 1, "operator", Verb::Update, 409);
            lost.held = Some(100 + i as u64);
            requests.extend([landed, lost]);
        }
        let report = run(requests);
        assert_eq!(report.conflicts.len(), 1);
        let c = &report.conflicts[0];
        assert_eq!((c.refused, c.stale_cache), (3, false));
        assert_eq!(c.written_since, vec![writer("kcm").label()]);
    }

    #[test]
    fn a_hot_loop_is_a_sustained_rate_not_a_burst() {
        let burst: Vec<Request> = (0..30).map(|i| req(i, "op", Verb::Update, 200)).collect();
        assert!(run(burst).hot_loops.is_empty(), "one hot minute is a burst");
        let sustained: Vec<Request> =
            (0..36).map(|i| req(i * 5, "op", Verb::Update, if i % 3 == 0 { 409 } else { 200 })).collect();
        let report = run(sustained);
        assert_eq!(report.hot_loops.len(), 1, "{report:#?}");
        assert_eq!(report.hot_loops[0].minutes, 3);
        assert_eq!(report.hot_loops[0].peak_per_minute, 12);
    }

    fn lease(at: i64, holder: &str) -> Request {
        let mut r = req(at, "elector", Verb::Update, 200);
        r.object = ObjectKey {
            group: "coordination.k8s.io".into(),
            resource: "leases".into(),
            namespace: "ns".into(),
            name: "lock".into(),
        };
        r.level = Level::Request;
        r.body = Some(Box::new(Body { holder: Some(holder.into()), lease_seconds: Some(10), ..Default::default() }));
        r
    }

    #[test]
    fn leadership_moves_gaps_and_two_leaders() {
        // a leads, dies; after a 25 s gap b takes over; then a and b renew in turn.
        let report = run(vec![
            lease(0, "a"),
            lease(2, "a"),
            lease(27, "b"),
            lease(29, "a"),
            lease(30, "b"),
            lease(31, "a"),
            lease(32, "b"),
        ]);
        let l = &report.leadership[0];
        assert_eq!(l.holders, ["a", "b"]);
        assert_eq!(l.takeovers.len(), 5);
        assert_eq!(l.gaps.len(), 1);
        assert!(!l.gaps[0].same_holder);
        assert!(l.interleaved >= 2, "{l:#?}");
        let quiet = run((0..20).map(|i| lease(i * 2, "a")).collect());
        assert!(quiet.leadership.is_empty());
    }

    #[test]
    fn uids_are_numbers_and_other_text_is_hashed_apart() {
        assert_eq!(crate::snapshot::audit::id_number("00000000-0000-0000-0000-0000000000ff"), 255);
        assert_eq!(crate::snapshot::audit::id_number("0A000000-0000-0000-0000-000000000000"), 0x0a << 120);
        let odd = ["d-1", "00000000-0000-0000-0000-0000000000ff0", "", "zz"];
        let numbers: HashSet<u128> = odd.iter().map(|u| crate::snapshot::audit::id_number(u)).collect();
        assert_eq!(numbers.len(), odd.len());
        assert!(!numbers.contains(&255));
    }

    fn settings() -> Settings {
        Settings {
            fight_min: 3,
            conflict_min: 1,
            hot_per_minute: 4,
            hot_minutes: 2,
            churn_min: 2,
            ..Settings::default()
        }
    }

    /// Once an object goes quiet, the sweep frees its boxes, and what it showed is still
    /// reported: a hot loop, a 409 told by the writes before it.
    #[test]
    fn a_quiet_object_is_freed_and_its_findings_kept() {
        let mut acc = Accumulator::new(settings());
        for i in 0..12 {
            acc.observe(&req(i * 10, "op", Verb::Update, 200));
        }
        acc.observe(&req(121, "kcm", Verb::Update, 200));
        acc.observe(&req(122, "op", Verb::Update, 409));
        let mut plain = req(130, "kubelet", Verb::Patch, 200);
        plain.object.name = "plain".into();
        acc.observe(&plain);
        // An hour later, many other objects: sweeps run.
        for i in 0..200 {
            let mut other = req(3600 + i, "kubelet", Verb::Patch, 200);
            other.object.name = format!("other-{i}").into();
            acc.observe(&other);
        }
        assert!(acc.states[1].active.is_none(), "a quiet object's writes and rates are freed");
        let hot = acc.states[0].active.as_deref().expect("a hot run worth reporting is kept");
        assert!(hot.recent.is_empty() && hot.rates.len() == 1, "{hot:?}");
        let report = acc.finish();
        assert_eq!(report.hot_loops.len(), 1, "{report:#?}");
        assert_eq!(report.hot_loops[0].minutes, 2);
        assert_eq!(report.conflicts.len(), 1);
        assert_eq!(report.conflicts[0].written_since, vec![writer("kcm").label()]);
    }

    proptest::proptest! {
        /// Within the windows the findings look back over (writes kept 10 minutes, reactions
        /// within 10 minutes), sweeping changes nothing: sweeping before every write gives
        /// the report never sweeping gives.
        #[test]
        fn sweeping_changes_no_finding(
            steps in proptest::collection::vec((0i64..12, 0usize..3, 0usize..3, 0usize..4, proptest::bool::ANY, 0usize..3), 1..60)
        ) {
            let mut at = 0;
            let mut requests = Vec::new();
            for (dt, who, object, verb, refused, sub) in steps {
                at += dt;
                let verb = [Verb::Create, Verb::Update, Verb::Patch, Verb::Delete][verb];
                let mut r = req(at, ["a", "b", "c"][who], verb, if refused { 409 } else { 200 });
                r.object.name = format!("o-{object}").into();
                r.subresource = ["", "status", "scale"][sub].into();
                if object == 1 {
                    r.object.resource = "replicasets".into();
                    r.uid = Some("rs-uid".into());
                }
                if object == 2 {
                    r.level = Level::Request;
                    r.body = Some(Box::new(Body {
                        owners: vec![("ReplicaSet".into(), "o-1".into(), "rs-uid".into())],
                        fields: vec![(".spec.x".into(), (at % 3) as u64)],
                        ..Default::default()
                    }));
                    r.held = Some(at as u64);
                }
                requests.push(r);
            }
            let mut never = Accumulator::new(settings());
            let mut always = Accumulator::new(settings());
            for r in &requests {
                never.next_sweep = Micros::MAX;
                never.observe(r);
                always.sweep(r.at);
                always.observe(r);
            }
            let (never, always) = (never.finish(), always.finish());
            proptest::prop_assert_eq!(format!("{never:?}"), format!("{always:?}"));
        }
    }

    #[test]
    fn reaction_lags_from_a_write_to_the_first_write_of_an_owned_object() {
        let mut deploy = req(0, "kubectl", Verb::Update, 200);
        deploy.uid = Some("d-1".into());
        let mut rs = req(0, "kcm", Verb::Create, 201);
        rs.at += 250_000;
        rs.object.resource = "replicasets".into();
        rs.object.name = "web-1".into();
        rs.level = Level::Request;
        rs.body = Some(Box::new(Body {
            owners: vec![("Deployment".into(), "web".into(), "d-1".into())],
            ..Default::default()
        }));
        let mut again = rs.clone();
        again.at += 1_000_000;
        again.verb = Some(Verb::Update);
        let report = run(vec![deploy, rs, again]);
        assert_eq!(report.lags.len(), 1);
        assert_eq!((report.lags[0].reactions, report.lags[0].p50_millis), (1, 250));
        assert_eq!(report.lags[0].written, "deployments.apps");
    }
}
