//! A one-word-or-so status for an object, from its full JSON: replica readiness for
//! workloads, phase for pods, Ready/Available conditions for anything else. Pure.

use serde_json::Value;

/// How the status reads: the renderer picks a colour from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Good,
    Degraded,
    Failed,
    Neutral,
}

pub fn status(kind: &str, object: &Value) -> Option<(String, Health)> {
    let int = |p: &str| object.pointer(p).and_then(Value::as_i64);
    let replicas = |ready: &str, want: Option<i64>| {
        let (r, w) = (int(ready).unwrap_or(0), want.unwrap_or(1));
        Some((format!("{r}/{w} ready"), if r >= w { Health::Good } else { Health::Degraded }))
    };
    match kind {
        "Deployment" | "ReplicaSet" | "StatefulSet" | "ReplicationController" => {
            replicas("/status/readyReplicas", int("/spec/replicas"))
        }
        "DaemonSet" => replicas("/status/numberReady", Some(int("/status/desiredNumberScheduled").unwrap_or(0))),
        "Pod" => {
            let phase = object.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Unknown");
            let ready = condition(object, "Ready").map(|(s, _)| s == "True");
            match (phase, ready) {
                ("Running", Some(false)) => Some(("Running, not ready".into(), Health::Degraded)),
                ("Running", _) | ("Succeeded", _) => Some((phase.into(), Health::Good)),
                ("Failed", _) | ("Unknown", _) => Some((phase.into(), Health::Failed)),
                _ => Some((phase.into(), Health::Degraded)),
            }
        }
        "Job" => {
            if condition(object, "Complete").is_some_and(|(s, _)| s == "True") {
                Some(("Complete".into(), Health::Good))
            } else if let Some((_, reason)) = condition(object, "Failed").filter(|(s, _)| s == "True") {
                Some((format!("Failed: {reason}"), Health::Failed))
            } else {
                Some((format!("{} active", int("/status/active").unwrap_or(0)), Health::Neutral))
            }
        }
        _ => ["Ready", "Available"].iter().find_map(|t| {
            condition(object, t).map(|(s, reason)| match s.as_str() {
                "True" => (t.to_string(), Health::Good),
                _ if reason.is_empty() => (format!("Not{t}"), Health::Failed),
                _ => (format!("Not{t}: {reason}"), Health::Failed),
            })
        }),
    }
}

/// (status, reason) of the condition of this type.
fn condition(object: &Value, kind: &str) -> Option<(String, String)> {
    object.pointer("/status/conditions")?.as_array()?.iter().find_map(|c| {
        (c.get("type")?.as_str()? == kind).then(|| {
            let field = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            (field("status"), field("reason"))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn workloads_pods_jobs_and_conditions() {
        let d = json!({"spec": {"replicas": 3}, "status": {"readyReplicas": 2}});
        assert_eq!(status("Deployment", &d), Some(("2/3 ready".into(), Health::Degraded)));
        let rs = json!({"spec": {"replicas": 0}, "status": {}});
        assert_eq!(status("ReplicaSet", &rs), Some(("0/0 ready".into(), Health::Good)));
        let pod = json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}});
        assert_eq!(status("Pod", &pod), Some(("Running, not ready".into(), Health::Degraded)));
        assert_eq!(status("Pod", &json!({"status": {"phase": "Pending"}})), Some(("Pending".into(), Health::Degraded)));
        let job =
            json!({"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}});
        assert_eq!(status("Job", &job), Some(("Failed: BackoffLimitExceeded".into(), Health::Failed)));
        let cr = json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Waiting"}]}});
        assert_eq!(status("Widget", &cr), Some(("NotReady: Waiting".into(), Health::Failed)));
        assert_eq!(status("ConfigMap", &json!({"data": {}})), None);
    }
}
