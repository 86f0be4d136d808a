//! Connection, requests, listing and discovery: the only I/O layer.

pub mod args;
pub mod contexts;
pub mod discovery;
pub mod duration;
mod gzip;
pub mod kubeconfig;
pub mod list;
pub mod pace;
pub mod protobuf;
pub mod proxy;
pub mod request;
pub mod retry;
pub mod transport;
mod unreachable;
pub mod watch;

use std::sync::Arc;

use jiff::Timestamp;

use anyhow::Result;
use futures::{StreamExt, stream};
use serde::de::DeserializeOwned;
use tokio::sync::OnceCell;

use args::ConnectionArgs;
pub use kubeconfig::Target;
use list::Listed;
pub use request::{Accept, Conn, Reply, RequestError, WatchStream};

/// A connected session: where we are and how to ask.
#[derive(Clone)]
pub struct Session {
    pub conn: Conn,
    pub context: Option<String>,
    pub namespace: String,
    pub all_namespaces: bool,
    /// For -A without cluster-wide rights: the namespaces to read one by one, found once.
    readable: Arc<OnceCell<(Vec<String>, &'static str)>>,
}

pub use crate::snapshot::Skipped;

/// A list that -A had to read namespace by namespace, because listing across all
/// namespaces was forbidden.
#[derive(Debug, Clone)]
pub struct Fallback {
    pub read: Vec<String>,
    /// How many of the namespaces found refused the list too.
    pub forbidden: usize,
    /// Where the namespaces came from.
    pub source: &'static str,
}

impl Fallback {
    /// "leases: listing across all namespaces is forbidden; read namespace by namespace: a (...)".
    pub fn note(&self, what: &str) -> Skipped {
        let mut text = format!(
            "listing across all namespaces is forbidden; read namespace by namespace: {} ({})",
            self.read.join(", "),
            self.source
        );
        if self.forbidden > 0 {
            text.push_str(&format!("; {} more namespaces forbidden", self.forbidden));
        }
        Skipped::new(what, None, text)
    }
}

impl Session {
    pub async fn open(args: &ConnectionArgs) -> Result<Session> {
        let target = kubeconfig::resolve(args).await?;
        let conn = Conn::new(&target)?;
        Ok(Session {
            conn,
            context: target.context,
            namespace: target.namespace,
            all_namespaces: args.all_namespaces,
            readable: Arc::default(),
        })
    }

    /// The namespace commands read in: None with -A.
    pub fn scope(&self) -> Option<&str> {
        (!self.all_namespaces).then_some(self.namespace.as_str())
    }

    /// Lists the namespaced `collection(namespace)`; with no namespace, across all
    /// namespaces, and when that is forbidden, namespace by namespace over the namespaces
    /// the user can find (the namespace list, else the context's namespace), saying so.
    pub async fn list_scoped<T: DeserializeOwned + Send + 'static>(
        &self,
        namespace: Option<&str>,
        collection: impl Fn(Option<&str>) -> String,
        query: &str,
        accept: Accept,
    ) -> Result<(Listed<T>, Option<Fallback>), RequestError> {
        let (listed, fallback) =
            self.list_scoped_digested(namespace, collection, query, accept, list::gather_dated::<T>).await?;
        Ok((listed.flattened(), fallback))
    }

    /// [`Session::list_scoped`], each page folded into its list's `P` as it arrives
    /// ([`list::list_all_digested`]): one `P` per list read (one per namespace when
    /// read namespace by namespace).
    pub async fn list_scoped_digested<T, P, D>(
        &self,
        namespace: Option<&str>,
        collection: impl Fn(Option<&str>) -> String,
        query: &str,
        accept: Accept,
        digest: D,
    ) -> Result<(Listed<P>, Option<Fallback>), RequestError>
    where
        T: DeserializeOwned + Send + 'static,
        P: Default + Send + 'static,
        D: Fn(&mut P, Vec<T>, Option<Timestamp>) + Clone + Send + 'static,
    {
        let page_size = list::page_size(accept);
        let list = |path: String| {
            let digest = digest.clone();
            async move { list::list_all_digested(&self.conn, &path, query, accept, page_size, digest).await }
        };
        if let Some(ns) = namespace {
            return Ok((list(collection(Some(ns))).await?, None));
        }
        let refused = match list(collection(None)).await {
            Ok(listed) => return Ok((listed, None)),
            Err(e) if e.forbidden() => e,
            Err(e) => return Err(e),
        };
        let (namespaces, source) = self.readable.get_or_init(|| self.find_namespaces()).await.clone();
        let collection = &collection;
        let list = &list;
        let lists: Vec<(String, Result<Listed<P>, RequestError>)> = stream::iter(namespaces)
            .map(|ns| async move {
                let listed = list(collection(Some(&ns))).await;
                (ns, listed)
            })
            .buffered(pace::FAN_OUT)
            .collect()
            .await;
        let mut merged = Listed {
            items: Vec::new(),
            server_time: None,
            dates: Vec::new(),
            resource_version: String::new(),
            restarts: 0,
        };
        let mut fallback = Fallback { read: Vec::new(), forbidden: 0, source };
        for (ns, listed) in lists {
            match listed {
                Ok(l) => {
                    merged.items.extend(l.items);
                    merged.server_time = merged.server_time.or(l.server_time);
                    fallback.read.push(ns);
                }
                Err(e) if e.forbidden() => fallback.forbidden += 1,
                Err(e) => return Err(e),
            }
        }
        if fallback.read.is_empty() {
            return Err(refused);
        }
        Ok((merged, Some(fallback)))
    }

    async fn find_namespaces(&self) -> (Vec<String>, &'static str) {
        match list::list_names(&self.conn, "/api/v1/namespaces").await {
            Ok(names) => (names, "from the namespace list"),
            Err(_) => (vec![self.namespace.clone()], "the context's namespace; namespaces may not be listed"),
        }
    }

    /// Fails with `namespace "x" not found` when the namespace in scope does not exist, so a
    /// mistyped -n is an error rather than an empty, all-clear answer. A namespace the user
    /// may not read is taken on trust (a user with rights in one namespace only often cannot).
    pub async fn check_namespace(&self) -> Result<()> {
        if self.all_namespaces {
            return Ok(());
        }
        let path = format!("/api/v1/namespaces/{}", list::encode(&self.namespace));
        match self.conn.get(&path, Accept::Metadata).await {
            Err(e) if e.not_found() => Err(anyhow::anyhow!("namespace {:?} not found", self.namespace)),
            Err(e) if !e.answered() => Err(e.into()),
            _ => Ok(()),
        }
    }

    /// Runs `work` while checking that the namespace exists, side by side rather than
    /// one round trip after the other. A missing namespace wins over whatever `work`
    /// found (its lists would only have come back empty).
    pub async fn checking_namespace<T>(&self, work: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        let (check, result) = futures::join!(self.check_namespace(), work);
        check?;
        result
    }

    /// GET and decode JSON.
    pub async fn get_json<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<(T, Reply), RequestError> {
        let reply = self.conn.get(path, Accept::Json).await?;
        decode(&reply, path, self.conn.server()).map(|v| (v, reply))
    }
}

/// Decodes a reply body (JSON, or a protobuf metadata list), turning a malformed body into a
/// RequestError that names the path.
pub fn decode<T: serde::de::DeserializeOwned>(reply: &Reply, path: &str, server: &str) -> Result<T, RequestError> {
    let decoded = if reply.protobuf {
        protobuf::from_list(&reply.body).map_err(|e| e.to_string())
    } else {
        serde_json::from_slice(&reply.body).map_err(|e| e.to_string())
    };
    decoded.map_err(|message| RequestError {
        method: http::Method::GET,
        path: path.to_string(),
        server: server.to_string(),
        failure: request::Failure::Undecodable,
        message,
        retry_after: None,
        conflicts: Vec::new(),
    })
}
