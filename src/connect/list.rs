//! Paginated lists: `limit` + `continue`, restarting from the first page when a
//! continue token expires (410 Gone), so callers always get one consistent list.

use std::cell::RefCell;

use jiff::Timestamp;
use serde::Deserialize;
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};

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
        Accept::MetadataList | Accept::MetadataListJson | Accept::Table => METADATA_PAGE_SIZE,
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
    /// For a flattened list, each page's first index in `items` and the Date it is judged by
    /// ([`Listed::dated`]): its list's first page's, as every page holds that page's snapshot.
    /// Throttled, one list answers seconds after another; read namespace by namespace, each
    /// namespace's list has its own.
    pub dates: Vec<(usize, Option<Timestamp>)>,
    pub resource_version: String,
    /// How many times a 410 Gone restarted the list.
    pub restarts: usize,
}

#[derive(Deserialize)]
struct Page<T> {
    #[serde(default)]
    metadata: PageMeta,
    /// Metadata-only lists send `"items": null` when empty. A Table's are its rows.
    #[serde(default = "Option::default", alias = "rows")]
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
    Ok(list_all_digested(conn, path, query, accept, page_size, gather_dated::<T>).await?.flattened())
}

/// A collection read a page at a time: one Vec per page, each of exactly its size, until
/// every list is in, then moved once into a Vec of the exact total ([`flatten`]). Grown item
/// by item, then list by list, a Vec doubles, holding the old buffer and the new at once:
/// that was the peak of a large read.
pub type Pages<T> = Vec<Vec<T>>;

/// The pages in one Vec, each page freed as soon as it is moved; a single page is kept as it is.
pub fn flatten<T>(mut pages: Pages<T>) -> Vec<T> {
    if pages.len() == 1 {
        return pages.pop().unwrap_or_default();
    }
    let mut all = Vec::with_capacity(pages.iter().map(Vec::len).sum());
    for page in pages {
        all.extend(page);
    }
    all
}

/// Keeps a page of items as it came: the fold of a plain list, flattened once at its end.
pub fn gather<T>(pages: &mut Pages<T>, page: Vec<T>) {
    if !page.is_empty() {
        pages.push(page);
    }
}

/// Pages as they came, each with the Date of its list's first page.
pub type DatedPages<T> = Vec<(Option<Timestamp>, Vec<T>)>;

/// [`gather`], keeping the page's Date: the fold of a list flattened with [`Listed::dated`].
pub fn gather_dated<T>(pages: &mut DatedPages<T>, page: Vec<T>, read_at: Option<Timestamp>) {
    if !page.is_empty() {
        pages.push((read_at, page));
    }
}

/// [`list_all_paged`], each page's items folded by `digest` into the list's `P` on the
/// blocking pool as soon as the page is decoded, while the next page is on its way: a long
/// list is digested as it arrives rather than after its last page. `items` holds that one
/// `P`; a 410 Gone that restarts the list starts it again from `P::default()`. `digest` is
/// also given the clock for the objects on the page: the Date of the list's first page.
pub async fn list_all_digested<T, P, D>(
    conn: &Conn,
    path: &str,
    query: &str,
    accept: Accept,
    page_size: usize,
    digest: D,
) -> Result<Listed<P>, RequestError>
where
    T: DeserializeOwned + Send + 'static,
    P: Default + Send + 'static,
    D: Fn(&mut P, Vec<T>, Option<Timestamp>) + Clone + Send + 'static,
{
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
        let mut folded = P::default();
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
            let head = match metadata_before_items(&reply.body) {
                Some(metadata) => metadata,
                None => super::decode::<Page<IgnoredAny>>(&reply, &url, conn.server())?.metadata,
            };
            let next = head.continue_token.filter(|t| !t.is_empty()).map(|t| {
                let next_url = page_url(Some(&t));
                (Fetch::start(conn, next_url.clone(), accept), next_url)
            });
            if server_time.is_none() {
                server_time = reply.server_time;
                resource_version = head.resource_version;
            }
            // Every page of a list is its first page's snapshot (the continue token holds its
            // resourceVersion): its objects are as they were when that page answered, however
            // much later a page comes, so that page's Date is their clock.
            folded = decode_page(reply, &url, conn.server(), server_time, folded, digest.clone()).await?;
            match next {
                Some((f, u)) => (fetch, url) = (f, u),
                None => {
                    return Ok(Listed {
                        items: vec![folded],
                        server_time,
                        dates: Vec::new(),
                        resource_version,
                        restarts,
                    });
                }
            }
        }
    }
}

impl<T> Listed<Pages<T>> {
    /// One list of items from the pages of each list read (their dates not kept).
    pub fn flattened(self) -> Listed<T> {
        Listed {
            items: flatten(self.items.into_iter().flatten().collect()),
            server_time: self.server_time,
            dates: Vec::new(),
            resource_version: self.resource_version,
            restarts: self.restarts,
        }
    }
}

impl<T> Listed<DatedPages<T>> {
    /// One list of items from the pages of each list read, each page's Date kept.
    pub fn flattened(self) -> Listed<T> {
        let mut dates = Vec::new();
        let mut start = 0;
        let pages: Pages<T> = self
            .items
            .into_iter()
            .flatten()
            .map(|(read_at, page)| {
                dates.push((start, read_at));
                start += page.len();
                page
            })
            .collect();
        Listed {
            items: flatten(pages),
            server_time: self.server_time,
            dates,
            resource_version: self.resource_version,
            restarts: self.restarts,
        }
    }
}

impl<T> Listed<T> {
    /// Each item with the Date of the answer that carried it (the first page's when the list
    /// kept no dates).
    pub fn dated(self) -> impl Iterator<Item = (T, Option<Timestamp>)> {
        let (dates, first) = (self.dates, self.server_time);
        let mut page = 0;
        self.items.into_iter().enumerate().map(move |(i, item)| {
            while dates.get(page + 1).is_some_and(|(start, _)| *start <= i) {
                page += 1;
            }
            (item, dates.get(page).map_or(first, |(_, at)| *at))
        })
    }
}

/// A page's list metadata read without scanning its items, when the metadata comes first
/// (the API server writes kind, apiVersion, metadata, then items): the next page's request
/// goes out after a few hundred bytes rather than after a scan of megabytes. None when the
/// body does not start as a JSON object with metadata before items; the caller then decodes
/// it all, which also reports whatever is wrong with it.
fn metadata_before_items(body: &[u8]) -> Option<PageMeta> {
    struct Head<'a>(&'a RefCell<Option<PageMeta>>);
    impl<'de> DeserializeSeed<'de> for Head<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Head<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut metadata = None;
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "metadata" => metadata = Some(map.next_value::<PageMeta>()?),
                    // Stopping here leaves the rest unread, which the parser reports as
                    // an error: the metadata has been kept by then.
                    "items" | "rows" if metadata.is_some() => {
                        *self.0.borrow_mut() = metadata;
                        return Err(A::Error::custom("items not read"));
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            *self.0.borrow_mut() = metadata;
            Ok(())
        }
    }
    let found = RefCell::new(None);
    let _ = Head(&found).deserialize(&mut serde_json::Deserializer::from_slice(body));
    found.into_inner()
}

/// Decodes a page and folds it into `folded` on the blocking pool: the runtime's workers
/// keep receiving the other lists meanwhile, and two large pages decode on two cores
/// instead of one after the other.
async fn decode_page<T, P, D>(
    reply: Reply,
    url: &str,
    server: &str,
    read_at: Option<Timestamp>,
    mut folded: P,
    digest: D,
) -> Result<P, RequestError>
where
    T: DeserializeOwned + Send + 'static,
    P: Send + 'static,
    D: FnOnce(&mut P, Vec<T>, Option<Timestamp>) + Send + 'static,
{
    let (url, server) = (url.to_string(), server.to_string());
    tokio::task::spawn_blocking(move || {
        let page: Page<T> = super::decode(&reply, &url, &server)?;
        drop(reply);
        let items = page.items.unwrap_or_default();
        crate::output::progress::objects_read(items.len());
        digest(&mut folded, items, read_at);
        Ok(folded)
    })
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

/// Percent-encodes a query value (continue tokens are base64 with `=`, `+` and `/`): all
/// but the URL's unreserved characters (RFC 3986), as Go's url.QueryEscape does but for the
/// space, which no value here holds.
pub fn encode(value: &str) -> String {
    const UNRESERVED: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');
    percent_encoding::utf8_percent_encode(value, UNRESERVED).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_flatten_in_order_and_empty_pages_are_not_kept() {
        let mut pages = Pages::new();
        for page in [vec![1, 2], vec![], vec![3]] {
            gather(&mut pages, page);
        }
        assert_eq!(pages.len(), 2);
        assert_eq!(flatten(pages), [1, 2, 3]);
        assert_eq!(flatten(vec![vec![4, 5]]), [4, 5]);
        assert_eq!(flatten(Pages::<i32>::new()), Vec::<i32>::new());
    }

    #[test]
    fn each_item_keeps_the_date_of_its_page() {
        let at = |s: i64| Some(Timestamp::from_second(s).unwrap());
        let (mut one, mut two) = (DatedPages::new(), DatedPages::new());
        gather_dated(&mut one, vec!['a', 'b'], at(10));
        gather_dated(&mut one, vec![], at(11));
        gather_dated(&mut one, vec!['c'], at(12));
        gather_dated(&mut two, vec!['d'], at(20));
        let listed = Listed {
            items: vec![one, two],
            server_time: at(10),
            dates: Vec::new(),
            resource_version: String::new(),
            restarts: 0,
        };
        let dated: Vec<(char, Option<Timestamp>)> = listed.flattened().dated().collect();
        assert_eq!(dated, [('a', at(10)), ('b', at(10)), ('c', at(12)), ('d', at(20))]);
    }

    #[test]
    fn null_items_are_an_empty_page() {
        let page: Page<serde_json::Value> =
            serde_json::from_str(r#"{"metadata":{"resourceVersion":"5"},"items":null}"#).unwrap();
        assert!(page.items.unwrap_or_default().is_empty());
        assert_eq!(page.metadata.resource_version, "5");
    }

    fn full_head(body: &str) -> Option<(Option<String>, String)> {
        let page: Page<IgnoredAny> = serde_json::from_str(body).ok()?;
        Some((page.metadata.continue_token, page.metadata.resource_version))
    }

    fn quick_head(body: &str) -> Option<(Option<String>, String)> {
        metadata_before_items(body.as_bytes()).map(|m| (m.continue_token, m.resource_version))
    }

    #[test]
    fn the_continue_token_is_read_before_the_items() {
        let page = r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"eyJ2Ijoi\u003c+/=="},"items":[{"a":1}]}"#;
        assert_eq!(quick_head(page), Some((Some("eyJ2Ijoi<+/==".into()), "7".into())));
        assert_eq!(quick_head(page), full_head(page));
        // Items that are not even JSON are never read: the page's own decode reports them.
        let truncated = r#"{"metadata":{"resourceVersion":"8"},"items":[{"a":"#;
        assert_eq!(quick_head(truncated), Some((None, "8".into())));
        assert_eq!(full_head(truncated), None);
    }

    #[test]
    fn a_tables_rows_are_its_items_and_its_head_is_read_before_them() {
        // As the API server writes a Table: the column definitions between metadata and rows.
        let table = r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"3","continue":"c"},"columnDefinitions":[{"name":"Name"}],"rows":[{"cells":["web-1","0/1"],"object":null}]}"#;
        let page: Page<serde_json::Value> = serde_json::from_str(table).unwrap();
        assert_eq!(page.items.unwrap(), vec![serde_json::json!({"cells": ["web-1", "0/1"], "object": null})]);
        assert_eq!(quick_head(table), Some((Some("c".into()), "3".into())));
        // Rows that are not JSON are left for the page's own decode, as items are.
        let truncated = r#"{"metadata":{"resourceVersion":"4"},"columnDefinitions":[],"rows":[{"cells":"#;
        assert_eq!(quick_head(truncated), Some((None, "4".into())));
    }

    #[test]
    fn metadata_after_items_or_none_is_still_found() {
        for page in [
            r#"{"items":[{"metadata":{"resourceVersion":"1"}}],"metadata":{"resourceVersion":"9","continue":"x"}}"#,
            r#"{"kind":"List","metadata":{"resourceVersion":"9"}}"#,
        ] {
            assert_eq!(quick_head(page), full_head(page), "{page}");
        }
        // No metadata, or not a list at all: the caller's full decode decides (and reports).
        for body in [r#"{"items":[]}"#, "", "[]", "<html>", r#"{"metadata":5,"items":[]}"#] {
            assert_eq!(quick_head(body), None, "{body}");
        }
    }

    proptest::proptest! {
        #[test]
        fn agrees_with_a_full_decode(
            token in proptest::option::of("\\PC{0,40}"),
            rv in "[0-9]{1,12}",
            items in proptest::collection::vec("\\PC{0,20}", 0..5),
            metadata_first in proptest::bool::ANY,
        ) {
            let meta = serde_json::json!({"resourceVersion": rv, "continue": token});
            let items = serde_json::json!(items.iter().map(|n| serde_json::json!({"metadata": {"name": n}})).collect::<Vec<_>>());
            let body = if metadata_first {
                format!(r#"{{"kind":"List","metadata":{meta},"items":{items}}}"#)
            } else {
                format!(r#"{{"items":{items},"kind":"List","metadata":{meta}}}"#)
            };
            proptest::prop_assert_eq!(quick_head(&body), full_head(&body));
            proptest::prop_assert!(quick_head(&body).is_some());
        }
    }

    #[test]
    fn encodes_reserved_characters() {
        assert_eq!(encode("eyJ2Ijoi+/=="), "eyJ2Ijoi%2B%2F%3D%3D");
        assert_eq!(encode("app in (a,b)"), "app%20in%20%28a%2Cb%29");
    }
}
