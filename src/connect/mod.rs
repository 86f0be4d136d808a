//! Connection, requests, listing and discovery: the only I/O layer.

pub mod discovery;
pub mod duration;
pub mod kubeconfig;
pub mod list;
pub mod request;
pub mod watch;

use anyhow::Result;

use crate::cli::ConnectionArgs;
pub use kubeconfig::Target;
pub use request::{Accept, Conn, Reply, RequestError, WatchStream};

/// A connected session: where we are and how to ask.
#[derive(Clone)]
pub struct Session {
    pub conn: Conn,
    pub context: Option<String>,
    pub namespace: String,
    pub all_namespaces: bool,
}

impl Session {
    pub async fn open(args: &ConnectionArgs) -> Result<Session> {
        let target = kubeconfig::resolve(args).await?;
        let conn = Conn::new(&target)?;
        Ok(Session { conn, context: target.context, namespace: target.namespace, all_namespaces: args.all_namespaces })
    }

    /// GET and decode JSON.
    pub async fn get_json<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<(T, Reply), RequestError> {
        let reply = self.conn.get(path, Accept::Json).await?;
        decode(&reply, path, self.conn.server()).map(|v| (v, reply))
    }
}

/// Decodes a reply body, turning a malformed body into a RequestError that names the path.
pub fn decode<T: serde::de::DeserializeOwned>(reply: &Reply, path: &str, server: &str) -> Result<T, RequestError> {
    serde_json::from_slice(&reply.body).map_err(|e| RequestError {
        method: http::Method::GET,
        path: path.to_string(),
        server: server.to_string(),
        code: Some(200),
        reason: "UndecodableBody".into(),
        message: e.to_string(),
    })
}
