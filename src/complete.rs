//! Completion through kubectl: for `kubectl coord <TAB>` kubectl (1.26+) runs the
//! executable `kubectl_complete-coord` with the words typed after `kubectl coord`, the
//! last being the word to complete (empty for a new word), and reads one candidate per
//! line (`value<TAB>description`) and a last line `:N`, cobra's ShellCompDirective.
//! Subcommands and flags come from the clap definition; namespaces, contexts and users
//! from the kubeconfig and the cluster; resource types and object names from discovery
//! and metadata-only lists, bounded by --request-timeout (5 s when unset) and silently
//! empty on any error: a completion must never print an error or hang the shell.

use std::time::Duration;

use clap::{CommandFactory, ValueEnum};

use crate::cli::{Cli, ConnectionArgs, OutputFormat};
use crate::commands::leases::fetch::leases_in;
use crate::connect::{Session, discovery, kubeconfig, list};

/// cobra's ShellCompDirective bits.
const NO_SPACE: u32 = 2;
const NO_FILE: u32 = 4;
const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Commands whose positional arguments are objects (TYPE/NAME or TYPE NAME).
const OBJECT_COMMANDS: &[&str] = &["owners", "fields", "trace"];

pub struct Completion {
    pub candidates: Vec<String>,
    pub directive: u32,
}

/// `kubectl coord __complete WORDS`, run by the `kubectl_complete-coord` launcher.
pub fn main_exit_code(words: Vec<String>) -> i32 {
    let done = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt.block_on(complete(&words)),
        Err(_) => Completion { candidates: Vec::new(), directive: NO_FILE },
    };
    let mut text = String::new();
    for c in &done.candidates {
        text.push_str(c);
        text.push('\n');
    }
    text.push_str(&format!(":{}\n", done.directive));
    let _ = crate::output::out(&text);
    0
}

/// What the typed words say so far.
#[derive(Debug, Default, PartialEq)]
pub struct Typed {
    pub subcommand: Option<String>,
    pub positionals: Vec<String>,
    /// The flag whose value is being completed (`-n` in `leases -n <TAB>`).
    pub value_of: Option<String>,
    pub connection: Vec<(String, String)>,
    pub all_namespaces: bool,
}

/// Long names (and short ones) of every flag that takes a value, from the clap definition.
fn flags_with_values() -> Vec<(Option<char>, String)> {
    let mut out = Vec::new();
    let root = Cli::command();
    let mut add = |cmd: &clap::Command| {
        for a in cmd.get_arguments() {
            if a.get_action().takes_values() && !a.is_positional() {
                out.push((a.get_short(), a.get_long().unwrap_or_default().to_string()));
            }
        }
    };
    add(&root);
    for sub in root.get_subcommands() {
        add(sub);
    }
    out
}

/// Reads the typed words (all but the one being completed).
pub fn read(typed: &[String]) -> Typed {
    let takes_value = flags_with_values();
    let long_of = |w: &str| -> Option<String> {
        if let Some(long) = w.strip_prefix("--") {
            return takes_value.iter().find(|(_, l)| l == long).map(|(_, l)| l.clone());
        }
        let short = w.strip_prefix('-')?.chars().next()?;
        (w.len() == 2).then(|| takes_value.iter().find(|(s, _)| *s == Some(short)).map(|(_, l)| l.clone()))?
    };
    let mut t = Typed::default();
    let mut i = 0;
    while i < typed.len() {
        let w = &typed[i];
        if w == "--" {
            break;
        }
        if let Some((flag, value)) = w.strip_prefix("--").and_then(|f| f.split_once('=')) {
            t.connection.push((flag.to_string(), value.to_string()));
        } else if let Some(long) = long_of(w) {
            match typed.get(i + 1) {
                Some(value) => t.connection.push((long, value.clone())),
                None => t.value_of = Some(long),
            }
            i += 1;
        } else if w == "-A" || w == "--all-namespaces" {
            t.all_namespaces = true;
        } else if !w.starts_with('-') {
            if t.subcommand.is_none() {
                t.subcommand = Some(w.clone());
            } else {
                t.positionals.push(w.clone());
            }
        }
        i += 1;
    }
    t
}

fn starting(prefix: &str, items: impl IntoIterator<Item = String>) -> Vec<String> {
    items.into_iter().filter(|c| c.starts_with(prefix)).collect()
}

pub async fn complete(words: &[String]) -> Completion {
    let (to_complete, typed) = match words.split_last() {
        Some((last, rest)) => (last.as_str(), rest),
        None => ("", &[][..]),
    };
    let t = read(typed);
    let root = Cli::command();
    let done = |candidates: Vec<String>, directive: u32| Completion { candidates, directive };

    if let Some(flag) = &t.value_of {
        return match flag.as_str() {
            "namespace" => done(starting(to_complete, live_names(&t, "/api/v1/namespaces").await), NO_FILE),
            "context" | "cluster" | "user" => done(starting(to_complete, kubeconfig_names(&t, flag)), NO_FILE),
            "output" => done(
                starting(
                    to_complete,
                    OutputFormat::value_variants()
                        .iter()
                        .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_string())),
                ),
                NO_FILE,
            ),
            // Paths: let the shell complete files.
            "kubeconfig" | "certificate-authority" => done(Vec::new(), 0),
            _ => done(possible_values(&root, t.subcommand.as_deref(), flag, to_complete), NO_FILE),
        };
    }
    if to_complete.starts_with('-') {
        return done(flags(&root, t.subcommand.as_deref(), to_complete), NO_FILE);
    }
    let Some(sub) = t.subcommand.as_deref() else {
        let subs = root
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| format!("{}\t{}", s.get_name(), s.get_about().map(|a| a.to_string()).unwrap_or_default()));
        return done(starting(to_complete, subs), NO_FILE);
    };
    match sub {
        "leases" => {
            let ns = namespace(&t);
            let path = leases_in((!t.all_namespaces).then_some(ns.as_str()));
            done(starting(to_complete, live_names(&t, &path).await), NO_FILE)
        }
        s if OBJECT_COMMANDS.contains(&s) => {
            if s == "trace" && !t.positionals.is_empty() {
                return done(Vec::new(), NO_FILE);
            }
            done(objects(&t, to_complete).await, NO_FILE | if to_complete.contains('/') { 0 } else { NO_SPACE })
        }
        "completion" => done(possible_values(&root, Some(sub), "shell", to_complete), NO_FILE),
        _ => done(Vec::new(), NO_FILE),
    }
}

/// `--flag\thelp` for the subcommand's flags and the global ones.
fn flags(root: &clap::Command, sub: Option<&str>, prefix: &str) -> Vec<String> {
    let mut args: Vec<&clap::Arg> = root.get_arguments().collect();
    if let Some(cmd) = sub.and_then(|s| root.find_subcommand(s)) {
        args.extend(cmd.get_arguments());
    }
    let mut out: Vec<String> = args
        .into_iter()
        .filter(|a| !a.is_positional() && !a.is_hide_set())
        .filter_map(|a| {
            let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            a.get_long().map(|l| format!("--{l}\t{help}"))
        })
        .collect();
    out.sort();
    out.dedup();
    starting(prefix, out)
}

/// The possible values clap knows for `--flag` (or a positional by id).
fn possible_values(root: &clap::Command, sub: Option<&str>, flag: &str, prefix: &str) -> Vec<String> {
    let cmd = sub.and_then(|s| root.find_subcommand(s)).unwrap_or(root);
    let arg = cmd
        .get_arguments()
        .chain(root.get_arguments())
        .find(|a| a.get_long() == Some(flag) || a.get_id().as_str() == flag);
    let values = arg.map(|a| a.get_possible_values()).unwrap_or_default();
    starting(prefix, values.into_iter().filter(|v| !v.is_hide_set()).map(|v| v.get_name().to_string()))
}

/// The connection the typed flags describe, with a short request timeout by default.
fn connection(t: &Typed) -> ConnectionArgs {
    let mut c = ConnectionArgs { request_timeout: DEFAULT_TIMEOUT, ..Default::default() };
    for (flag, value) in &t.connection {
        let v = value.clone();
        match flag.as_str() {
            "kubeconfig" => c.kubeconfig = Some(v.into()),
            "context" => c.context = Some(v),
            "cluster" => c.cluster = Some(v),
            "user" => c.user = Some(v),
            "namespace" => c.namespace = Some(v),
            "as" => c.as_user = Some(v),
            "as-group" => c.as_group.push(v),
            "as-uid" => c.as_uid = Some(v),
            "server" => c.server = Some(v),
            "token" => c.token = Some(v),
            "certificate-authority" => c.certificate_authority = Some(v.into()),
            "request-timeout" => {
                if let Ok(Some(limit)) = crate::connect::duration::parse_timeout(&v) {
                    c.request_timeout = limit;
                }
            }
            _ => {}
        }
    }
    c.all_namespaces = t.all_namespaces;
    c
}

fn namespace(t: &Typed) -> String {
    t.connection.iter().rev().find(|(f, _)| f == "namespace").map(|(_, v)| v.clone()).unwrap_or_default()
}

fn kubeconfig_names(t: &Typed, what: &str) -> Vec<String> {
    let path = t.connection.iter().find(|(f, _)| f == "kubeconfig").map(|(_, v)| std::path::PathBuf::from(v));
    let Ok(Some(kc)) = kubeconfig::load_kubeconfig(path.as_deref()) else { return Vec::new() };
    match what {
        "context" => kc.contexts.into_iter().map(|c| c.name).collect(),
        "cluster" => kc.clusters.into_iter().map(|c| c.name).collect(),
        _ => kc.auth_infos.into_iter().map(|u| u.name).collect(),
    }
}

async fn session(t: &Typed) -> Option<Session> {
    Session::open(&connection(t)).await.ok()
}

/// Names in a collection; nothing on any error, and never longer than the timeout.
async fn live_names(t: &Typed, path: &str) -> Vec<String> {
    let Some(s) = session(t).await else { return Vec::new() };
    bounded(list::list_names(&s.conn, path)).await.and_then(Result::ok).unwrap_or_default()
}

async fn bounded<T>(work: impl std::future::Future<Output = T>) -> Option<T> {
    tokio::time::timeout(Duration::from_secs(10), work).await.ok()
}

/// `TYPE/` for every listable type (plural names; plural.group where a plural is served
/// by several groups), or, after `TYPE/`, `TYPE/NAME` for its objects in the namespace.
async fn objects(t: &Typed, to_complete: &str) -> Vec<String> {
    let Some(s) = session(t).await else { return Vec::new() };
    let Some(Ok(resources)) = bounded(discovery::discover(&s.conn)).await else { return Vec::new() };
    let listable: Vec<&crate::analyze::resource_ref::ApiResource> =
        resources.iter().filter(|r| r.listable() && r.preferred && !r.plural.contains('/')).collect();
    match to_complete.split_once('/') {
        None => {
            let mut types: Vec<String> = listable
                .iter()
                .map(|r| {
                    let shared = listable.iter().filter(|o| o.plural == r.plural).count() > 1;
                    if shared && !r.group.is_empty() {
                        format!("{}/", r.qualified_name())
                    } else {
                        format!("{}/", r.plural)
                    }
                })
                .collect();
            types.sort();
            types.dedup();
            starting(to_complete, types)
        }
        Some((type_name, _)) => {
            let Ok(r) = crate::analyze::resource_ref::resolve(type_name, &resources) else { return Vec::new() };
            let ns = (!s.all_namespaces && r.namespaced).then_some(s.namespace.as_str());
            let names =
                bounded(list::list_names(&s.conn, &r.collection(ns))).await.and_then(Result::ok).unwrap_or_default();
            starting(to_complete, names.into_iter().map(|n| format!("{type_name}/{n}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn reads_subcommand_positionals_and_flag_values() {
        let t = read(&words("leases -n kube-system --context=prod web"));
        assert_eq!(t.subcommand.as_deref(), Some("leases"));
        assert_eq!(t.positionals, vec!["web".to_string()]);
        assert_eq!(t.connection, vec![("namespace".into(), "kube-system".into()), ("context".into(), "prod".into())]);
        let t = read(&words("owners -n"));
        assert_eq!(t.value_of.as_deref(), Some("namespace"));
        let t = read(&words("-A trace --stall-after 5s deploy/web"));
        assert!(t.all_namespaces);
        assert_eq!((t.subcommand.as_deref(), t.positionals.len()), (Some("trace"), 1));
    }

    #[tokio::test]
    async fn subcommands_flags_and_values_without_a_cluster() {
        let c = complete(&words("tr")).await;
        assert_eq!(c.candidates.len(), 1);
        assert!(c.candidates[0].starts_with("trace\t"), "{:?}", c.candidates);
        assert_eq!(c.directive, NO_FILE);
        let c = complete(&words("trace --st")).await;
        assert!(c.candidates.iter().any(|f| f.starts_with("--stall-after\t")), "{:?}", c.candidates);
        let c = complete(&words("leases -o y")).await;
        assert_eq!(c.candidates, vec!["yaml".to_string()]);
        let c = complete(&words("check --only ov")).await;
        assert_eq!(c.candidates, vec!["overlaps".to_string()]);
        let c = complete(&words("owners --cascade f")).await;
        assert_eq!(c.candidates, vec!["foreground".to_string()]);
        let c = complete(&words("completion z")).await;
        assert_eq!(c.candidates, vec!["zsh".to_string()]);
        // A second object for trace: nothing.
        assert!(complete(&words("trace deploy/a ")).await.candidates.is_empty());
    }
}
