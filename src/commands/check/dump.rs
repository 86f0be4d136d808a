//! `kubectl coord dump`: the lists `check` reads, written as they come in (see
//! [`crate::source::dump`] for the format), for `check --from` where there is no access.

use std::cell::RefCell;
use std::io::Write;

use anyhow::Result;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::value::RawValue;

use super::Plan;
use super::fetch::{self, FULL_CONCURRENCY, SYSTEM};
use crate::analyze::resource_ref::ApiResource;
use crate::commands::leases::fetch::leases_in;
use crate::commands::owners::fetch::{Intake, Progress, Scope, list_types};
use crate::connect::pace::FAN_OUT;
use crate::connect::{Accept, Session, discovery};
use crate::source::dump::{self, Header, ListedKind, Page, Record, Trailer};

/// What the dump wrote.
pub struct Written {
    pub objects: usize,
    pub lists: usize,
    pub skipped: Vec<crate::connect::Skipped>,
}

/// One list's records, compressed as its pages come in: a gzip member of its own.
#[derive(Default)]
struct Member {
    gz: Option<GzEncoder<Vec<u8>>>,
    objects: usize,
    error: Option<String>,
}

impl Member {
    fn record(&mut self, record: &Record) {
        let gz = self.gz.get_or_insert_with(|| GzEncoder::new(Vec::new(), Compression::fast()));
        let written = serde_json::to_writer(&mut *gz, record)
            .map_err(|e| e.to_string())
            .and_then(|()| gz.write_all(b"\n").map_err(|e| e.to_string()));
        if let Err(e) = written {
            self.error.get_or_insert(e);
        }
    }

    fn bytes(self) -> Result<Vec<u8>, String> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.gz.map_or(Ok(Vec::new()), |gz| gz.finish().map_err(|e| e.to_string()))
    }
}

/// What every mechanism but history reads.
fn plan() -> Plan {
    Plan { history: false, ..Plan::from_args(&[], &[]) }
}

/// Writes the dump of `session`'s scope to `out`.
pub async fn write(session: &Session, out: &mut dyn Write) -> Result<Written> {
    let discovered = session.checking_namespace(async { Ok(discovery::discover(&session.conn).await?) }).await?;
    let all = session.all_namespaces;
    let scope = if all { Scope::AllNamespaces } else { Scope::Namespace(session.namespace.clone()) };
    let plan = plan();
    let types = fetch::plan_types(&discovered.resources, &plan);
    let (whole, meta): (Vec<ApiResource>, Vec<ApiResource>) =
        types.iter().map(|(r, _)| r.clone()).partition(|r| fetch::reads_whole(r, &plan));
    let mut header = Member::default();
    header.record(&Record::Header(Header {
        api_version: dump::API_VERSION.into(),
        kind: dump::KIND.into(),
        context: session.context.clone(),
        namespace: (!all).then(|| session.namespace.clone()),
        resources: discovered.resources.clone(),
    }));
    out.write_all(&header.bytes().map_err(anyhow::Error::msg)?)?;
    let sink = RefCell::new((out, 0usize, 0usize, None::<String>));
    let take = |_: &ApiResource, member: Member| {
        let (out, objects, lists, error) = &mut *sink.borrow_mut();
        *objects += member.objects;
        *lists += 1;
        let written = member.bytes().and_then(|b| out.write_all(&b).map_err(|e| e.to_string()));
        if let Err(e) = written {
            error.get_or_insert(e);
        }
    };
    let page = move |member: &mut Member, r: &ApiResource, items: Vec<Box<RawValue>>, read_at| {
        let metadata_only = !fetch::reads_whole(r, &plan);
        let items: Vec<Box<RawValue>> = if metadata_only {
            let fields = fetch::census_kind(r);
            let secret = r.group.is_empty() && r.plural == "secrets";
            items.iter().filter_map(|i| dump::trim_metadata(i, fields, secret)).collect()
        } else {
            items
        };
        member.objects += items.len();
        member.record(&Record::Page(Page { resource: r.clone(), metadata_only, system_leases: false, read_at, items }));
    };
    let progress = Progress::new(whole.len() + meta.len());
    let (whole_lists, meta_lists, unscheduled, system) = futures::join!(
        list_types(session, &whole, &scope, |_| Accept::Json, FULL_CONCURRENCY, &progress, Intake { page, list: take }),
        list_types(
            session,
            &meta,
            &scope,
            |_| Accept::MetadataListJson,
            FAN_OUT,
            &progress,
            Intake { page, list: take }
        ),
        fetch::unscheduled_pods(session, &scope, true),
        async {
            match &scope {
                Scope::Namespace(ns) if ns != SYSTEM => session
                    .list_scoped::<Box<RawValue>>(Some(SYSTEM), leases_in, "", Accept::Json)
                    .await
                    .ok()
                    .map(|(listed, _)| (listed.server_time, listed.items)),
                _ => None,
            }
        }
    );
    progress.clear();
    let (whole_lists, meta_lists) = (whole_lists?, meta_lists?);
    let (out, objects, lists, error) = sink.into_inner();
    if let Some(e) = error {
        anyhow::bail!("cannot write the dump: {e}");
    }
    let mut trailer = Trailer { server_time: whole_lists.server_time.or(meta_lists.server_time), ..Trailer::default() };
    let mut tail = Member::default();
    if let Some((read_at, items)) = system {
        let leases = discovered.resources.iter().find(|r| r.group == "coordination.k8s.io" && r.plural == "leases");
        if let Some(r) = leases {
            tail.record(&Record::Page(Page {
                resource: r.clone(),
                metadata_only: false,
                system_leases: true,
                read_at,
                items,
            }));
        }
    }
    for lists in [&whole_lists, &meta_lists] {
        for ((group, kind), place) in lists.listed.iter() {
            let namespaces = match place {
                crate::analyze::owner_graph::Listed::Everywhere => Vec::new(),
                crate::analyze::owner_graph::Listed::In(ns) => ns.iter().cloned().collect(),
            };
            trailer.listed.push(ListedKind { group: group.clone(), kind: kind.clone(), namespaces });
        }
        trailer.skipped.extend(lists.skipped.iter().cloned());
    }
    trailer.skipped.extend(discovered.skipped());
    match unscheduled {
        Ok(u) => {
            let (namespace, keys, read_at) = u.parts();
            trailer.unscheduled = Some(dump::Unscheduled { namespace, keys, read_at });
        }
        Err(skip) => trailer.skipped.push(skip),
    }
    let skipped = trailer.skipped.clone();
    tail.record(&Record::Trailer(trailer));
    out.write_all(&tail.bytes().map_err(anyhow::Error::msg)?)?;
    out.flush()?;
    Ok(Written { objects, lists, skipped })
}
