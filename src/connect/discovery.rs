//! API discovery: the aggregated endpoint (apidiscovery.k8s.io/v2, two requests)
//! when served, else the legacy per-group walk. Produces plain resource records
//! ([`ApiResource`], in [`crate::snapshot`]) that `analyze::resource_ref` resolves user
//! arguments against.

use futures::{StreamExt, stream};
use serde::Deserialize;

use super::request::{Accept, Conn, RequestError};

pub use crate::snapshot::{ApiResource, Discovered, Unavailable};

#[derive(Deserialize)]
struct GroupList {
    #[serde(default)]
    items: Vec<DiscoveredGroup>,
}

#[derive(Deserialize)]
struct DiscoveredGroup {
    #[serde(default)]
    metadata: Named,
    #[serde(default)]
    versions: Vec<DiscoveredVersion>,
}

#[derive(Deserialize, Default)]
struct Named {
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
struct DiscoveredVersion {
    version: String,
    #[serde(default)]
    resources: Vec<DiscoveredResource>,
    /// "Stale" when the API server could not refresh it: an aggregated API (an APIService)
    /// that does not answer. Its resources are the last ones it knew, if any.
    #[serde(default)]
    freshness: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DiscoveredResource {
    resource: String,
    #[serde(default)]
    response_kind: Option<Kind>,
    #[serde(default)]
    scope: String,
    #[serde(default)]
    singular_resource: String,
    #[serde(default)]
    short_names: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
}

#[derive(Deserialize)]
struct Kind {
    #[serde(default)]
    kind: String,
}

/// Every resource the server serves, preferred versions first within a group, and the APIs
/// that did not answer.
pub async fn discover(conn: &Conn) -> Result<Discovered, RequestError> {
    match aggregated(conn).await {
        Ok(Some(found)) => Ok(found),
        Ok(None) => legacy(conn).await,
        Err(e) => Err(e),
    }
}

/// `None` when the server does not answer with aggregated discovery (before 1.26).
async fn aggregated(conn: &Conn) -> Result<Option<Discovered>, RequestError> {
    let mut found = Discovered::default();
    // Both documents at once: discovery sits in front of every list that follows.
    let (core, groups) =
        futures::join!(conn.get("/api", Accept::AggregatedDiscovery), conn.get("/apis", Accept::AggregatedDiscovery));
    for (root, reply) in [("/api", core), ("/apis", groups)] {
        let reply = reply?;
        let Ok(list) = serde_json::from_slice::<GroupList>(&reply.body) else {
            return Ok(None);
        };
        if list.items.is_empty() && root == "/apis" {
            // A legacy APIGroupList decodes as an empty aggregated list.
            let legacy: serde_json::Value = serde_json::from_slice(&reply.body).unwrap_or_default();
            if legacy.get("kind").and_then(|k| k.as_str()) != Some("APIGroupDiscoveryList") {
                return Ok(None);
            }
        }
        add_groups(&mut found, list.items);
    }
    Ok(Some(found))
}

/// Adds an aggregated discovery document's groups: fresh versions' resources, and stale
/// versions (an APIService that does not answer) as unavailable.
fn add_groups(found: &mut Discovered, items: Vec<DiscoveredGroup>) {
    for group in items {
        for (i, version) in group.versions.iter().enumerate() {
            let stale = version.freshness == "Stale";
            let out = if stale {
                let group_version = if group.metadata.name.is_empty() {
                    version.version.clone()
                } else {
                    format!("{}/{}", group.metadata.name, version.version)
                };
                found.unavailable.push(Unavailable { group_version, resources: Vec::new() });
                &mut found.unavailable.last_mut().expect("just pushed").resources
            } else {
                &mut found.resources
            };
            for r in &version.resources {
                out.push(ApiResource {
                    group: group.metadata.name.clone(),
                    version: version.version.clone(),
                    plural: r.resource.clone(),
                    singular: r.singular_resource.clone(),
                    kind: r.response_kind.as_ref().map(|k| k.kind.clone()).unwrap_or_default(),
                    short_names: r.short_names.clone(),
                    namespaced: r.scope == "Namespaced",
                    verbs: r.verbs.clone(),
                    // Versions are listed in preference order.
                    preferred: i == 0,
                });
            }
        }
    }
}

async fn legacy(conn: &Conn) -> Result<Discovered, RequestError> {
    #[derive(Deserialize)]
    struct Groups {
        #[serde(default)]
        groups: Vec<Group>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Group {
        name: String,
        #[serde(default)]
        versions: Vec<GroupVersion>,
        preferred_version: Option<GroupVersion>,
    }
    #[derive(Deserialize, Clone)]
    struct GroupVersion {
        version: String,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct ResourceList {
        #[serde(default)]
        resources: Vec<Resource>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Resource {
        name: String,
        #[serde(default)]
        singular_name: String,
        #[serde(default)]
        namespaced: bool,
        #[serde(default)]
        kind: String,
        #[serde(default)]
        verbs: Vec<String>,
        #[serde(default)]
        short_names: Vec<String>,
    }
    let groups: Groups = super::decode(&conn.get("/apis", Accept::Json).await?, "/apis", conn.server())?;
    let mut targets = vec![(String::new(), "v1".to_string(), true)];
    for g in groups.groups {
        let preferred = g.preferred_version.map(|p| p.version);
        for v in g.versions {
            let is_preferred = preferred.as_deref() == Some(&v.version);
            targets.push((g.name.clone(), v.version, is_preferred));
        }
    }
    let lists: Vec<_> = stream::iter(targets)
        .map(|(group, version, preferred)| async move {
            let path = if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
            let list = conn
                .get(&path, Accept::Json)
                .await
                .and_then(|r| super::decode::<ResourceList>(&r, &path, conn.server()));
            (group, version, preferred, list)
        })
        .buffered(8)
        .collect()
        .await;
    let mut found = Discovered::default();
    let out = &mut found.resources;
    for (group, version, preferred, list) in lists {
        // A group whose aggregated API server is down is skipped, as kubectl does, and named.
        let Ok(list) = list else {
            let group_version = if group.is_empty() { version } else { format!("{group}/{version}") };
            found.unavailable.push(Unavailable { group_version, resources: Vec::new() });
            continue;
        };
        for r in list.resources.into_iter().filter(|r| !r.name.contains('/')) {
            out.push(ApiResource {
                group: group.clone(),
                version: version.clone(),
                singular: if r.singular_name.is_empty() { r.kind.to_lowercase() } else { r.singular_name },
                plural: r.name,
                kind: r.kind,
                short_names: r.short_names,
                namespaced: r.namespaced,
                verbs: r.verbs,
                preferred,
            });
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An aggregated /apis document as kube-apiserver serves it while metrics-server is down.
    const APIS: &str = r#"{"kind": "APIGroupDiscoveryList", "items": [
      {"metadata": {"name": "apps"}, "versions": [{"version": "v1", "freshness": "Current", "resources": [
        {"resource": "deployments", "responseKind": {"kind": "Deployment"}, "scope": "Namespaced",
         "singularResource": "deployment", "shortNames": ["deploy"], "verbs": ["get", "list"]}]}]},
      {"metadata": {"name": "metrics.k8s.io"}, "versions": [{"version": "v1beta1", "freshness": "Stale"}]}]}"#;

    fn discovered() -> Discovered {
        let list: GroupList = serde_json::from_str(APIS).unwrap();
        let mut found = Discovered::default();
        add_groups(&mut found, list.items);
        found
    }

    #[test]
    fn stale_versions_are_unavailable_not_served() {
        let found = discovered();
        let served: Vec<&str> = found.iter().map(|r| r.plural.as_str()).collect();
        assert_eq!(served, ["deployments"]);
        assert_eq!(found.unavailable.len(), 1);
        assert_eq!(found.unavailable[0].group_version, "metrics.k8s.io/v1beta1");
        assert_eq!(
            found.warnings(),
            ["metrics.k8s.io/v1beta1 is unavailable (its API server does not answer); its types were not read"]
        );
        assert_eq!(found.skipped()[0].resource, "metrics.k8s.io/v1beta1");
    }

    #[test]
    fn a_target_of_an_unavailable_api_is_a_cluster_error_naming_it() {
        use crate::error::{EXIT_CLUSTER, EXIT_USAGE, exit_code_for};
        let found = discovered();
        assert_eq!(found.resolve("deploy").unwrap().kind, "Deployment");
        let named = found.resolve("nodes.metrics.k8s.io").unwrap_err();
        assert_eq!(exit_code_for(&named), EXIT_CLUSTER);
        assert!(named.to_string().contains("metrics.k8s.io/v1beta1 is unavailable"), "{named}");
        let short = found.resolve("podmetrics").unwrap_err();
        assert_eq!(exit_code_for(&short), EXIT_CLUSTER);
        assert!(short.to_string().contains("or it is served by metrics.k8s.io/v1beta1"), "{short}");
        let all_up = Discovered { resources: found.resources.clone(), unavailable: Vec::new() };
        assert_eq!(exit_code_for(&all_up.resolve("podmetrics").unwrap_err()), EXIT_USAGE);
    }
}
