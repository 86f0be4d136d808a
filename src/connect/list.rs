//! Paginated lists: `limit` + `continue`, restarting from the first page when a
//! continue token expires (410 Gone), so callers always get one consistent list.

use jiff::Timestamp;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::request::{Accept, Conn, Reply, RequestError};

/// Items per page of a full-object list: kubectl's default chunk size.
pub const PAGE_SIZE: usize = 500;
/// Items per page of a metadata-only list. Pages of one list are fetched one after
/// another (each needs the previous continue token), so a large list of small items
/// costs mostly round trips: a bigger page shortens that chain.
pub const METADATA_PAGE_SIZE: usize = 2000;

/// The page size for `accept`, or KUBECTL_COORD_PAGE_SIZE when set (tests use a tiny one).
pub fn page_size(accept: Accept) -> usize {
    forced_page_size().unwrap_or(match accept {
        Accept::MetadataList => METADATA_PAGE_SIZE,
        _ => PAGE_SIZE,
    })
}

fn forced_page_size() -> Option<usize> {
    static FORCED: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *FORCED
        .get_or_init(|| std::env::var("KUBECTL_COORD_PAGE_SIZE").ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0))
}

/// A list whose continue token keeps expiring is retried this many times from the start.
const MAX_RESTARTS: usize = 3;

#[derive(Debug)]
pub struct Listed<T> {
    pub items: Vec<T>,
    /// The server's clock at the first page.
    pub server_time: Option<Timestamp>,
    pub resource_version: String,
    /// How many times a 410 Gone restarted the list.
    pub restarts: usize,
}

#[derive(Deserialize)]
struct Page<T> {
    #[serde(default)]
    metadata: PageMeta,
    /// Metadata-only lists send `"items": null` when empty.
    #[serde(default = "Option::default")]
    items: Option<Vec<T>>,
}

#[derive(Deserialize, Default)]
struct PageMeta {
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
    #[serde(default, rename = "resourceVersion")]
    resource_version: String,
}

/// Lists `path` (a collection path such as `/api/v1/namespaces/x/pods`) page by page.
/// `query` is extra query text without the leading `?` (e.g. `labelSelector=a%3Db`).
pub async fn list_all<T: DeserializeOwned + Send + 'static>(
    conn: &Conn,
    path: &str,
    query: &str,
    accept: Accept,
) -> Result<Listed<T>, RequestError> {
    list_all_paged(conn, path, query, accept, page_size(accept)).await
}

/// [`list_all`] with an explicit page size (KUBECTL_COORD_PAGE_SIZE still wins).
pub async fn list_all_paged<T: DeserializeOwned + Send + 'static>(
    conn: &Conn,
    path: &str,
    query: &str,
    accept: Accept,
    page_size: usize,
) -> Result<Listed<T>, RequestError> {
    let page_size = forced_page_size().unwrap_or(page_size);
    let page_url = |token: Option<&str>| {
        let mut url = format!("{path}?limit={page_size}");
        if !query.is_empty() {
            url.push('&');
            url.push_str(query);
        }
        if let Some(t) = token {
            url.push_str("&continue=");
            url.push_str(&encode(t));
        }
        url
    };
    let mut restarts = 0;
    let _counted = crate::output::progress::list();
    'restart: loop {
        let mut items = Vec::new();
        let mut server_time = None;
        let mut resource_version = String::new();
        let mut url = page_url(None);
        let mut fetch = Fetch::start(conn, url.clone(), accept);
        loop {
            let reply = match fetch.reply().await {
                Ok(r) => r,
                Err(e) if e.expired() && url.contains("&continue=") && restarts < MAX_RESTARTS => {
                    restarts += 1;
                    continue 'restart;
                }
                Err(e) => return Err(e),
            };
            // The next page is requested before this one is decoded: the round trip
            // and the decoding overlap instead of adding up.
            let head: Page<serde::de::IgnoredAny> = super::decode(&reply, &url, conn.server())?;
            let next = head.metadata.continue_token.filter(|t| !t.is_empty()).map(|t| {
                let next_url = page_url(Some(&t));
                (Fetch::start(conn, next_url.clone(), accept), next_url)
            });
            if server_time.is_none() {
                server_time = reply.server_time;
                resource_version = head.metadata.resource_version;
            }
            let page = decode_page::<T>(reply, &url, conn.server()).await?;
            let page_items = page.items.unwrap_or_default();
            crate::output::progress::objects_read(page_items.len());
            items.extend(page_items);
            match next {
                Some((f, u)) => (fetch, url) = (f, u),
                None => return Ok(Listed { items, server_time, resource_version, restarts }),
            }
        }
    }
}

/// Decodes a page on the blocking pool: the runtime's workers keep receiving the other
/// lists meanwhile, and two large pages decode on two cores instead of one after the other.
async fn decode_page<T: DeserializeOwned + Send + 'static>(
    reply: Reply,
    url: &str,
    server: &str,
) -> Result<Page<T>, RequestError> {
    let (url, server) = (url.to_string(), server.to_string());
    tokio::task::spawn_blocking(move || super::decode(&reply, &url, &server))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// A page request running on its own task, aborted if dropped unread (when the page
/// before it fails to decode, nobody wants it).
struct Fetch(tokio::task::JoinHandle<Result<Reply, RequestError>>);

impl Fetch {
    fn start(conn: &Conn, url: String, accept: Accept) -> Fetch {
        let conn = conn.clone();
        Fetch(tokio::spawn(async move { conn.get(&url, accept).await }))
    }

    async fn reply(&mut self) -> Result<Reply, RequestError> {
        (&mut self.0).await.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
    }
}

impl Drop for Fetch {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The names of every object in a collection, listed metadata-only.
pub async fn list_names(conn: &Conn, path: &str) -> Result<Vec<String>, RequestError> {
    #[derive(Deserialize)]
    struct Item {
        metadata: Named,
    }
    #[derive(Deserialize)]
    struct Named {
        name: String,
    }
    let listed = list_all::<Item>(conn, path, "", Accept::MetadataList).await?;
    Ok(listed.items.into_iter().map(|i| i.metadata.name).collect())
}

/// Percent-encodes a query value (continue tokens are base64 with `=`, `+` and `/`).
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_items_are_an_empty_page() {
        let page: Page<serde_json::Value> =
            serde_json::from_str(r#"{"metadata":{"resourceVersion":"5"},"items":null}"#).unwrap();
        assert!(page.items.unwrap_or_default().is_empty());
        assert_eq!(page.metadata.resource_version, "5");
    }

    #[test]
    fn encodes_reserved_characters() {
        assert_eq!(encode("eyJ2Ijoi+/=="), "eyJ2Ijoi%2B%2F%3D%3D");
        assert_eq!(encode("app in (a,b)"), "app%20in%20%28a%2Cb%29");
    }
}
