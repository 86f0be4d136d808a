//! Which kubeconfig contexts a fleet run covers: `--contexts a,b`, `--contexts '/regex/'`
//! or `--all-contexts`, in kubeconfig order.

use std::path::Path;

use anyhow::Result;

use super::args::FleetArgs;
use super::kubeconfig::load_kubeconfig;
use crate::error::usage;

/// The contexts to run in, from the (merged) kubeconfig.
pub fn select(fleet: &FleetArgs, kubeconfig: Option<&Path>) -> Result<Vec<String>> {
    let loaded = load_kubeconfig(kubeconfig)?.ok_or_else(|| {
        usage("no kubeconfig found: --contexts and --all-contexts pick contexts from one (set KUBECONFIG or --kubeconfig)")
    })?;
    let names: Vec<String> = loaded.contexts.into_iter().map(|c| c.name).collect();
    pick(&names, fleet.contexts.as_deref()).map_err(usage)
}

/// `spec` None: every context. "/re/": the contexts the regex matches (anywhere in the
/// name, as grep does; anchor it for whole names). Else a comma-separated list of names,
/// each of which must exist.
pub fn pick(names: &[String], spec: Option<&str>) -> Result<Vec<String>, String> {
    let Some(spec) = spec else {
        if names.is_empty() {
            return Err("the kubeconfig has no contexts".into());
        }
        return Ok(names.to_vec());
    };
    if let Some(pattern) = spec.strip_prefix('/').and_then(|s| s.strip_suffix('/')) {
        let re = regex::Regex::new(pattern).map_err(|e| {
            let why = e.to_string().lines().last().unwrap_or_default().trim().to_string();
            format!("--contexts /{pattern}/: not a regular expression: {why}")
        })?;
        let found: Vec<String> = names.iter().filter(|n| re.is_match(n)).cloned().collect();
        if found.is_empty() {
            return Err(format!(
                "--contexts /{pattern}/ matches none of the kubeconfig's contexts ({})",
                names.join(", ")
            ));
        }
        return Ok(found);
    }
    let mut out: Vec<String> = Vec::new();
    for name in spec.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !names.iter().any(|n| n == name) {
            return Err(format!("context {name:?} not found in the kubeconfig (it has: {})", names.join(", ")));
        }
        if !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    if out.is_empty() {
        return Err("--contexts names no context".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        ["prod-eu", "prod-us", "staging", "kind-dev"].iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn lists_regexes_and_everything() {
        assert_eq!(pick(&names(), None).unwrap().len(), 4);
        assert_eq!(pick(&names(), Some("staging, prod-eu,staging")).unwrap(), ["staging", "prod-eu"]);
        assert_eq!(pick(&names(), Some("/^prod-/")).unwrap(), ["prod-eu", "prod-us"]);
        assert_eq!(pick(&names(), Some("/dev/")).unwrap(), ["kind-dev"]);
    }

    #[test]
    fn mistakes_are_named() {
        assert!(pick(&names(), Some("prod")).unwrap_err().contains("context \"prod\" not found"));
        assert!(pick(&names(), Some("/^qa/")).unwrap_err().contains("matches none"));
        assert!(pick(&names(), Some("/(/")).unwrap_err().contains("not a regular expression"));
        assert!(pick(&names(), Some(",")).unwrap_err().contains("names no context"));
        assert!(pick(&[], None).unwrap_err().contains("no contexts"));
    }
}
