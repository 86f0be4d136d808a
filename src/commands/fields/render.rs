//! The wire format and the tables of `fields`.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::Value;

use super::census;
use crate::age::since as age;
use crate::analyze::fields::{Contest, Entry};
use crate::connect::Skipped;
use crate::output::table::{Grid, Tone, styled};
use crate::output::{Printer, serde_name};

#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldReport {
    pub api_version: &'static str,
    pub kind: &'static str,
    /// The server's clock when the (first) object was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_time: Option<Timestamp>,
    /// Objects are read whole or not at all: a missing one is an error, never a skip.
    pub complete: bool,
    pub skipped: Vec<Skipped>,
    pub objects: Vec<ObjectFields>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectFields {
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub server_time: Option<Timestamp>,
    pub managers: Vec<Entry>,
    pub fields: Vec<FieldRow>,
    pub contests: Vec<Contest>,
    /// Entries whose fieldsV1 could not be decoded, with why.
    pub undecodable: Vec<String>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldRow {
    pub path: String,
    pub owners: Vec<Owner>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    pub manager: String,
    pub operation: String,
    pub subresource: String,
    pub time: Option<Timestamp>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CensusReport<'a> {
    pub api_version: &'static str,
    pub kind: &'static str,
    #[serde(flatten)]
    pub census: &'a census::Census,
}

pub fn table(o: &ObjectFields, printer: &Printer, by_manager: bool) -> String {
    let mut text = String::new();
    if by_manager {
        let mut grid =
            Grid::new(vec!["MANAGER", "OPERATION", "SUBRESOURCE", "APIVERSION", "FIELDS", "LAST WRITE", "AREAS"]);
        for e in &o.managers {
            let areas: BTreeSet<String> = e
                .paths
                .iter()
                .map(|p| {
                    let s = p.to_string();
                    let mut parts = s.trim_start_matches('.').splitn(3, '.');
                    match (parts.next(), parts.next()) {
                        (Some("metadata"), Some(sub)) => {
                            format!("metadata.{}", sub.split('[').next().unwrap_or(sub))
                        }
                        (Some(top), _) => top.split('[').next().unwrap_or(top).to_string(),
                        _ => s,
                    }
                })
                .collect();
            grid.row(vec![
                e.manager.clone().into(),
                e.operation.clone().into(),
                if e.subresource.is_empty() { "<main>".into() } else { e.subresource.clone().into() },
                e.api_version.clone().into(),
                e.paths.len().to_string().into(),
                age(e.time, o.server_time).into(),
                areas.into_iter().collect::<Vec<_>>().join(",").into(),
            ]);
        }
        text.push_str(&grid.render(printer));
    } else {
        let mut headers = vec!["PATH", "MANAGER", "OPERATION", "SUBRESOURCE", "AGE"];
        if printer.wide() {
            headers.push("VALUE");
        }
        let mut grid = Grid::new(headers);
        let contested: BTreeSet<&str> = o.contests.iter().map(|c| c.path.as_str()).collect();
        for f in &o.fields {
            for owner in &f.owners {
                let tone = if contested.contains(f.path.as_str()) { Tone::Warn } else { Tone::Plain };
                let mut row = vec![
                    styled(f.path.clone(), tone),
                    owner.manager.clone().into(),
                    owner.operation.clone().into(),
                    if owner.subresource.is_empty() { "<main>".into() } else { owner.subresource.clone().into() },
                    age(owner.time, o.server_time).into(),
                ];
                if printer.wide() {
                    let v = f.value.as_ref().map(|v| match v {
                        Value::Object(_) | Value::Array(_) => "{...}".to_string(),
                        other => other.to_string(),
                    });
                    row.push(v.unwrap_or_else(|| "<none>".into()).into());
                }
                grid.row(row);
            }
        }
        text.push_str(&grid.render(printer));
    }
    if !o.contests.is_empty() {
        text.push('\n');
        for c in &o.contests {
            let kind = serde_name(&c.kind);
            text.push_str(&format!(
                "{}/{}: {} {kind}: {}\n",
                o.kind.to_lowercase(),
                o.name,
                c.path,
                c.managers.join(", ")
            ));
        }
    }
    text
}
