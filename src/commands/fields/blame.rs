//! `fields TYPE/NAME -o blame`: the object as YAML with a gutter naming each line's owners.

use clap::ValueEnum;
use jiff::Timestamp;
use owo_colors::{AnsiColors, OwoColorize};

use crate::age::since as age;
use crate::analyze::blame::Line;
use crate::analyze::fields::{Entry, path_within};

/// How the gutter shows when an owner last wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum BlameTime {
    /// Age on the server's clock (5m, 2d); with -f, on this machine's clock
    #[default]
    Relative,
    /// The RFC 3339 timestamp from managedFields
    Full,
    /// No time
    None,
}

/// What the gutter keeps: owners by manager name, lines by path prefix.
pub struct Filter<'a> {
    pub manager: Option<&'a str>,
    pub path: Option<&'a str>,
}

const PALETTE: [AnsiColors; 8] = [
    AnsiColors::Cyan,
    AnsiColors::Green,
    AnsiColors::Magenta,
    AnsiColors::Blue,
    AnsiColors::Yellow,
    AnsiColors::BrightCyan,
    AnsiColors::BrightGreen,
    AnsiColors::BrightMagenta,
];

/// `kubectl Update/scale 5m`: who, how, through which subresource, when.
fn owner_text(e: &Entry, now: Option<Timestamp>, time: BlameTime) -> String {
    let mut text = format!("{} {}", e.manager, e.operation);
    if !e.subresource.is_empty() {
        text.push('/');
        text.push_str(&e.subresource);
    }
    match time {
        BlameTime::Relative => {
            text.push(' ');
            text.push_str(&age(e.time, now));
        }
        BlameTime::Full => {
            text.push(' ');
            text.push_str(&e.time.map(|t| t.to_string()).unwrap_or_else(|| "<unknown>".into()));
        }
        BlameTime::None => {}
    }
    text
}

/// The YAML lines behind a gutter as wide as its widest entry; several owners are
/// comma-separated, each in its manager's colour when `color`.
pub fn render(
    lines: &[Line],
    entries: &[Entry],
    now: Option<Timestamp>,
    time: BlameTime,
    filter: &Filter,
    color: bool,
) -> String {
    let mut managers: Vec<&str> = Vec::new();
    for e in entries {
        if !managers.contains(&e.manager.as_str()) {
            managers.push(&e.manager);
        }
    }
    let gutters: Vec<Vec<(usize, String)>> = lines
        .iter()
        .map(|line| {
            let path = line.path.to_string();
            if filter.path.is_some_and(|prefix| !path_within(&path, prefix)) {
                return Vec::new();
            }
            line.owners
                .iter()
                .map(|&i| &entries[i])
                .filter(|e| filter.manager.is_none_or(|m| e.manager == m))
                .map(|e| {
                    let colour = managers.iter().position(|m| *m == e.manager).unwrap_or(0) % PALETTE.len();
                    (colour, owner_text(e, now, time))
                })
                .collect()
        })
        .collect();
    let width_of =
        |g: &[(usize, String)]| g.iter().map(|(_, t)| t.chars().count()).sum::<usize>() + 2 * g.len().saturating_sub(1);
    let width = gutters.iter().map(|g| width_of(g)).max().unwrap_or(0);
    let mut text = String::new();
    for (line, gutter) in lines.iter().zip(&gutters) {
        if width > 0 {
            let shown: Vec<String> =
                gutter.iter().map(|(c, t)| if color { t.color(PALETTE[*c]).to_string() } else { t.clone() }).collect();
            text.push_str(&shown.join(", "));
            text.push_str(&" ".repeat(width - width_of(gutter) + 2));
        }
        text.push_str(&line.text);
        // Trailing spaces from an empty YAML line would only add noise.
        while text.ends_with(' ') {
            text.pop();
        }
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::blame::blame;
    use serde_json::json;

    fn entry(manager: &str, op: &str, sub: &str, time: &str, fields: serde_json::Value) -> Entry {
        Entry { time: Some(time.parse().unwrap()), ..crate::analyze::fields::tests::entry(manager, op, sub, fields) }
    }

    fn sample() -> (serde_json::Value, Vec<Entry>) {
        let object = json!({"kind": "Deployment", "spec": {"replicas": 3, "paused": false}, "status": {"replicas": 3}});
        let entries = vec![
            entry("gitops", "Apply", "", "2026-12-03T10:00:00Z", json!({"f:spec": {"f:replicas": {}}})),
            entry("kubectl", "Update", "scale", "2026-12-03T11:55:00Z", json!({"f:spec": {"f:replicas": {}}})),
            entry("kcm", "Update", "status", "2026-12-03T11:59:00Z", json!({"f:status": {"f:replicas": {}}})),
        ];
        (object, entries)
    }

    #[test]
    fn gutter_names_every_owner_with_operation_subresource_and_age() {
        let (object, entries) = sample();
        let now = Some("2026-12-03T12:00:00Z".parse().unwrap());
        let all = Filter { manager: None, path: None };
        let text = render(&blame(&object, &entries), &entries, now, BlameTime::Relative, &all, false);
        let want = [
            "                                            kind: Deployment",
            "                                            spec:",
            "                                              paused: false",
            "gitops Apply 120m, kubectl Update/scale 5m    replicas: 3",
            "                                            status:",
            "kcm Update/status 60s                         replicas: 3",
        ]
        .map(|l| format!("{l}\n"))
        .concat();
        assert_eq!(text, want);
        let none = render(&blame(&object, &entries), &entries, now, BlameTime::None, &all, false);
        assert!(none.contains("\ngitops Apply, kubectl Update/scale  "), "{none}");
        let full = render(&blame(&object, &entries), &entries, now, BlameTime::Full, &all, false);
        assert!(full.contains("gitops Apply 2026-12-03T10:00:00Z, kubectl"), "{full}");
    }

    #[test]
    fn filters_empty_the_gutter_but_keep_the_object() {
        let (object, entries) = sample();
        let lines = blame(&object, &entries);
        let by_manager = Filter { manager: Some("kubectl"), path: None };
        let text = render(&lines, &entries, None, BlameTime::None, &by_manager, false);
        assert_eq!(text.lines().count(), 6);
        assert!(text.contains("kubectl Update/scale    replicas: 3"), "{text}");
        assert!(!text.contains("gitops") && !text.contains("kcm"), "{text}");
        let by_path = Filter { manager: None, path: Some(".status") };
        let text = render(&lines, &entries, None, BlameTime::None, &by_path, false);
        assert!(text.contains("kcm Update/status    replicas: 3"), "{text}");
        assert!(!text.contains("gitops"), "{text}");
        let nobody = Filter { manager: Some("nobody"), path: None };
        assert!(render(&lines, &entries, None, BlameTime::None, &nobody, false).starts_with("kind: Deployment\n"));
    }

    #[test]
    fn colour_per_manager_only_when_asked() {
        let (object, entries) = sample();
        let lines = blame(&object, &entries);
        let all = Filter { manager: None, path: None };
        let plain = render(&lines, &entries, None, BlameTime::None, &all, false);
        assert!(!plain.contains('\u{1b}'));
        let coloured = render(&lines, &entries, None, BlameTime::None, &all, true);
        let gitops = "gitops Apply".color(AnsiColors::Cyan).to_string();
        let kubectl = "kubectl Update/scale".color(AnsiColors::Green).to_string();
        assert!(coloured.contains(&format!("{gitops}, {kubectl}")), "{coloured:?}");
        // Alignment is by visible width, not by escape codes.
        let strip = |s: &str| {
            let mut out = String::new();
            let mut escape = false;
            for c in s.chars() {
                match (escape, c) {
                    (false, '\u{1b}') => escape = true,
                    (true, 'm') => escape = false,
                    (false, c) => out.push(c),
                    _ => {}
                }
            }
            out
        };
        assert_eq!(strip(&coloured), plain);
    }
}
