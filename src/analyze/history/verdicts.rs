//! The audit log's findings (src/analyze/history/findings.rs) as `check`'s findings: a code,
//! a severity and one sentence each, with the `history` command that shows the detail.

use serde::Serialize;

use super::findings::{Evidence, ObjectRef, Report, at, every};
use crate::age::human;
use crate::analyze::check::{Finding, Mechanism, Severity, command, type_name};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Fight,
    Conflicts,
    HotLoop,
    LeadershipChurn,
    RenewalGap,
    TwoLeaders,
    SlowReaction,
}

impl Kind {
    /// The reason check prints beside the code (the kind's serde name).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Fight => "fight",
            Kind::Conflicts => "conflicts",
            Kind::HotLoop => "hot-loop",
            Kind::LeadershipChurn => "leadership-churn",
            Kind::RenewalGap => "renewal-gap",
            Kind::TwoLeaders => "two-leaders",
            Kind::SlowReaction => "slow-reaction",
        }
    }

    pub const ALL: [Kind; 7] = [
        Kind::Fight,
        Kind::Conflicts,
        Kind::HotLoop,
        Kind::LeadershipChurn,
        Kind::RenewalGap,
        Kind::TwoLeaders,
        Kind::SlowReaction,
    ];
}

/// How the findings name objects and point at their detail.
pub struct Naming<'a> {
    /// The kind a resource of a group is (deployments, apps -> Deployment).
    pub kind_of: &'a dyn Fn(&str, &str) -> String,
    /// The `--audit-log ...` arguments the detail command repeats.
    pub log_args: &'a str,
}

impl Naming<'_> {
    fn finding(&self, kind: Kind, severity: Severity, object: &ObjectRef, message: String) -> Finding {
        let object_kind = (self.kind_of)(&object.group, &object.resource);
        let namespace = (!object.namespace.is_empty()).then(|| object.namespace.clone());
        let detail = format!("{} {}", command("history", &object.label(), namespace.as_deref()), self.log_args);
        Finding {
            severity,
            mechanism: Mechanism::History,
            code: kind.code(),
            reason: kind.name().to_string(),
            namespace,
            object: type_name(&object_kind, &object.group, &object.name),
            object_kind,
            message,
            detail,
            file: None,
        }
    }
}

/// Every finding of `report`, in the order of its lists.
pub fn findings(report: &Report, naming: &Naming) -> Vec<Finding> {
    let mut out = Vec::new();
    for f in &report.fights {
        let weaker = match f.evidence {
            Evidence::Field => "",
            Evidence::Object => {
                "; the log is at Metadata level, so this is the same part of the object, not the same field (weaker evidence)"
            }
        };
        let message = format!(
            "{} taken from each other {} times by {} and {}, from {} to {}{}{weaker}",
            f.fields.join(", "),
            f.alternations,
            f.writers[0],
            f.writers[1],
            at(f.first),
            at(f.last),
            every(f.first, f.last, f.alternations)
        );
        out.push(naming.finding(Kind::Fight, Severity::Warning, &f.object, message));
    }
    for c in &report.conflicts {
        let why = if !c.other_instances.is_empty() {
            format!("another instance of it ({}) wrote in between: two are running", c.other_instances.join(", "))
        } else if c.stale_cache {
            "only its own writes landed in between: it wrote from a stale cache".to_string()
        } else if c.written_since.is_empty() {
            "no write in between is in the log".to_string()
        } else {
            format!("written in between by {}", c.written_since.join(", "))
        };
        let exists = match c.already_exists {
            0 => String::new(),
            n => format!(" ({n} of them creates of an object that existed)"),
        };
        let message = format!(
            "{} {} {} refused with 409 Conflict{exists}, from {} to {}; {why}",
            c.writer,
            c.refused,
            if c.refused == 1 { "write" } else { "writes" },
            at(c.first),
            at(c.last)
        );
        let severity = if c.other_instances.is_empty() { Severity::Warning } else { Severity::Error };
        out.push(naming.finding(Kind::Conflicts, severity, &c.object, message));
    }
    for h in &report.hot_loops {
        let refused = if h.refused > 0 { format!(", {} refused", h.refused) } else { String::new() };
        let message = format!(
            "{} wrote it {} times in {} minutes, from {} to {} (up to {} a minute{refused})",
            h.writer,
            h.writes,
            h.minutes,
            at(h.from),
            at(h.until),
            h.peak_per_minute
        );
        out.push(naming.finding(Kind::HotLoop, Severity::Warning, &h.object, message));
    }
    for l in &report.leadership {
        if l.churn
            && let (Some(first), Some(last)) = (l.takeovers.first(), l.takeovers.last())
        {
            let mut chain: Vec<&str> = vec![&first.from];
            chain.extend(l.takeovers.iter().map(|t| t.to.as_str()));
            let shown = if chain.len() > 6 {
                format!("{} ... {}", chain[..3].join(" -> "), chain[chain.len() - 2..].join(" -> "))
            } else {
                chain.join(" -> ")
            };
            let message = format!(
                "leadership moved {} times, from {} to {} (up to {} in an hour): {shown}",
                l.takeovers.len(),
                at(first.at),
                at(last.at),
                l.most_in_an_hour
            );
            out.push(naming.finding(Kind::LeadershipChurn, Severity::Warning, &l.object, message));
        }
        let duration = l.duration_seconds.unwrap_or_default();
        for g in &l.gaps {
            let gap = human(std::time::Duration::from_secs_f64(g.seconds));
            let (then, severity) = if g.same_holder {
                ("the same holder renewed again: it went on as leader after its lease had expired", Severity::Warning)
            } else {
                ("another holder took over", Severity::Info)
            };
            let message = format!("not renewed for {gap} after {}, past its {duration}s duration; {then}", at(g.at));
            out.push(naming.finding(Kind::RenewalGap, severity, &l.object, message));
        }
        if l.interleaved >= 2 {
            let message = format!(
                "{} renewed it in turn {} times: two leaders at once",
                l.holders.iter().take(3).cloned().collect::<Vec<_>>().join(" and "),
                l.interleaved
            );
            out.push(naming.finding(Kind::TwoLeaders, Severity::Error, &l.object, message));
        }
    }
    for s in &report.slow {
        let ms = |m: u32| crate::age::precise(std::time::Duration::from_millis(u64::from(m)));
        let (resource, group) = s.written.split_once('.').unwrap_or((&s.written, ""));
        let object =
            ObjectRef { group: group.into(), resource: resource.into(), namespace: String::new(), name: "*".into() };
        let message = format!(
            "{} reacted to writes of {} in {} at the median and {} at the 90th percentile, over {} reactions",
            s.writer,
            s.written,
            ms(s.p50_millis),
            ms(s.p90_millis),
            s.reactions
        );
        out.push(naming.finding(Kind::SlowReaction, Severity::Warning, &object, message));
    }
    out
}

impl Kind {
    /// Its stable code (analyze/codes.rs lists them all).
    pub fn code(self) -> &'static str {
        match self {
            Kind::Fight => "CO601",
            Kind::Conflicts => "CO602",
            Kind::HotLoop => "CO603",
            Kind::LeadershipChurn => "CO604",
            Kind::RenewalGap => "CO605",
            Kind::TwoLeaders => "CO606",
            Kind::SlowReaction => "CO607",
        }
    }
}
