//! Words for text output that analyses and renderers both write: counts with their noun,
//! and enum variants as the JSON names them. Pure, and shared by the layers on each side.

use serde::Serialize;

/// "1 finding", "2 findings", "0 findings": a count with its noun, never "(s)". `noun` is
/// the singular; the plural adds "s" ("info" and nouns ending in s stay as they are).
pub fn counted(n: usize, noun: &str) -> String {
    if n == 1 || noun == "info" || noun.ends_with('s') { format!("{n} {noun}") } else { format!("{n} {noun}s") }
}

/// The name serde gives a unit enum variant (`at-risk`, `update-inside-apply`), for text output
/// that must say exactly what the JSON says.
pub fn serde_name<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}
