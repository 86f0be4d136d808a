//! List, then watch a collection until a deadline or Ctrl-C. A watch the server
//! closes is reopened from the last resourceVersion seen; an expired one (410 Gone,
//! or an ERROR event) lists afresh, so the caller can report only what changed.

use std::time::Duration;

use anyhow::Result;
use serde::Deserialize;
use serde_json::Value;

use super::list::{encode, list_all};
use super::request::{Accept, Conn};

/// Consecutive failures to reopen a watch before giving up.
const MAX_REOPEN_FAILURES: u32 = 5;

pub enum Event {
    /// A full list: at the start, and after the watch expired.
    Listed(Vec<Value>),
    Upsert(Value),
    Deleted(Value),
    /// Time passed (every `tick`), for callers that judge by elapsed time.
    Tick,
}

pub struct Follow<'a> {
    /// Json for whole objects, or Metadata for PartialObjectMetadata (lists and watch events).
    pub accept: Accept,
    /// A collection path, e.g. /apis/apps/v1/namespaces/x/deployments.
    pub collection: &'a str,
    /// Extra query without `?` (labelSelector=..., fieldSelector=...).
    pub query: &'a str,
    /// End after this long; None: until Ctrl-C.
    pub timeout: Option<Duration>,
    /// The server is asked to close each watch after this many seconds; it is then reopened.
    pub server_timeout_seconds: u64,
    pub tick: Option<Duration>,
}

#[derive(Deserialize)]
struct RawEvent {
    #[serde(rename = "type")]
    kind: String,
    object: Value,
}

/// Runs until the timeout or Ctrl-C; `handle` sees every list and change in order.
/// `warn` reports interruptions that were recovered from.
pub async fn follow(
    conn: &Conn,
    f: &Follow<'_>,
    mut handle: impl FnMut(Event) -> Result<()>,
    warn: impl Fn(&str),
) -> Result<()> {
    // A watch waits for changes rather than reading: a progress line would only sit there.
    crate::output::progress::stop();
    let deadline = f.timeout.map(|t| tokio::time::Instant::now() + t);
    let sleep = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(sleep);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut ticker = tokio::time::interval(f.tick.unwrap_or(Duration::from_secs(3600)));
    let mut rv = relist(conn, f, &mut handle).await?;
    let mut failures = 0;
    loop {
        let mut path = format!(
            "{}?watch=1&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={}",
            f.collection,
            encode(&rv),
            f.server_timeout_seconds
        );
        if !f.query.is_empty() {
            path.push('&');
            path.push_str(f.query);
        }
        let mut stream = match conn.watch_as(&path, f.accept).await {
            Ok(s) => {
                failures = 0;
                s
            }
            Err(e) if e.expired() => {
                rv = relist(conn, f, &mut handle).await?;
                continue;
            }
            Err(e) if failures < MAX_REOPEN_FAILURES && !e.forbidden() && !e.unauthorized() => {
                failures += 1;
                warn(&format!("watch interrupted ({e}); reopening"));
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        loop {
            tokio::select! {
                _ = &mut ctrl_c => return Ok(()),
                _ = &mut sleep => return Ok(()),
                _ = ticker.tick(), if f.tick.is_some() => handle(Event::Tick)?,
                line = stream.next_line() => match line {
                    Ok(Some(bytes)) => {
                        let Ok(event) = serde_json::from_slice::<RawEvent>(&bytes) else { continue };
                        let version = event.object.pointer("/metadata/resourceVersion").and_then(Value::as_str);
                        match event.kind.as_str() {
                            "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" => {
                                if let Some(v) = version {
                                    rv = v.to_string();
                                }
                            }
                            // ERROR: almost always 410 Gone for a too-old resourceVersion.
                            _ => {
                                rv = relist(conn, f, &mut handle).await?;
                                break;
                            }
                        }
                        match event.kind.as_str() {
                            "ADDED" | "MODIFIED" => handle(Event::Upsert(event.object))?,
                            "DELETED" => handle(Event::Deleted(event.object))?,
                            _ => {}
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        warn(&format!("watch stream broke ({e}); reopening"));
                        break;
                    }
                },
            }
        }
    }
}

/// Lists afresh, hands the items over, and returns the resourceVersion to watch from.
async fn relist(conn: &Conn, f: &Follow<'_>, handle: &mut impl FnMut(Event) -> Result<()>) -> Result<String> {
    let accept = if f.accept == Accept::Json { Accept::Json } else { Accept::MetadataList };
    let listed = list_all::<Value>(conn, f.collection, f.query, accept).await?;
    handle(Event::Listed(listed.items))?;
    Ok(listed.resource_version)
}
