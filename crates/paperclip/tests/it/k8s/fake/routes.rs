//! The fake's HTTP handlers: one per API path it serves.

use super::*;

pub(super) async fn record(State(fake): State<FakeK8s>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 4 << 20)
        .await
        .unwrap_or_default();
    fake.edit(|i| {
        i.requests.push(Recorded {
            method: parts.method.to_string(),
            path: parts.uri.path().to_string(),
            query: parts.uri.query().unwrap_or_default().to_string(),
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        })
    });
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

pub(super) type Q = Query<HashMap<String, String>>;

pub fn self_pod(api_url: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": SELF_POD, "namespace": NAMESPACE, "uid": "11111111-2222-3333-4444-555555555555"},
      "spec": {"serviceAccountName": "paperclip",
        "imagePullSecrets": [{"name": "regcred"}],
        "dnsConfig": {"nameservers": ["10.0.0.10"], "searches": ["paperclip.svc.cluster.local"], "options": [{"name": "ndots", "value": "2"}]},
        "containers": [{"name": "paperclip", "image": "ghcr.io/example/paperclip:1.0.0",
          "env": [{"name": "PAPERCLIP_API_URL", "value": api_url},
                  {"name": "PAPERCLIP_SIGNING_SECRET", "value": "server-signing-secret"},
                  {"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"name": "paperclip-db", "key": "url"}}},
                  {"name": "ANTHROPIC_API_KEY", "valueFrom": {"secretKeyRef": {"name": "paperclip-secrets", "key": "ANTHROPIC_API_KEY"}}},
                  {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
          "envFrom": [{"secretRef": {"name": "paperclip-bulk"}}],
          "volumeMounts": [{"name": "data", "mountPath": "/paperclip"}, {"name": "creds", "mountPath": "/etc/creds", "readOnly": true}]}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "paperclip-data"}},
                    {"name": "creds", "secret": {"secretName": "git-creds", "defaultMode": 256}}]},
      "status": {"phase": "Running"}})
}

pub(super) async fn namespace(Path(ns): Path<String>) -> Response {
    if ns != NAMESPACE {
        return not_found("namespaces", &ns);
    }
    Json(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}, "status": {"phase": "Active"}})).into_response()
}

pub(super) async fn get_pod(
    State(fake): State<FakeK8s>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    if ns == NAMESPACE && name == SELF_POD {
        let url = fake.inner.lock().unwrap().api_url.clone();
        return Json(self_pod(&url)).into_response();
    }
    match fake.inner.lock().unwrap().pods.get(&name) {
        Some(p) => Json(p.clone()).into_response(),
        None => not_found("pods", &name),
    }
}

pub(super) async fn list_pods(State(fake): State<FakeK8s>, Query(q): Q) -> Response {
    let inner = fake.inner.lock().unwrap();
    let items: Vec<&Pod> = inner
        .pods
        .values()
        .filter(|p| matches(p.metadata.labels.as_ref(), q.get("labelSelector")))
        .collect();
    Json(json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items})).into_response()
}

pub(super) async fn pod_log(
    State(fake): State<FakeK8s>,
    Path((_ns, name)): Path<(String, String)>,
    Query(q): Q,
) -> Response {
    let (started, first_follow, drop_after) = {
        let mut inner = fake.inner.lock().unwrap();
        let Some(log) = inner.logs.get(&name) else {
            return not_found("pods", &name);
        };
        let started = log.started;
        let follow = q.get("follow").is_some_and(|f| f == "true");
        if follow && started {
            inner.follows += 1;
        }
        (
            started,
            follow && (inner.follows == 1 || inner.faults.drop_every_follow),
            inner.faults.drop_log_after,
        )
    };
    if !started {
        return status(
            400,
            "BadRequest",
            format!(
                "container \"{}\" in pod \"{name}\" is waiting to start: PodInitializing",
                q.get("container").map(String::as_str).unwrap_or_default()
            ),
        );
    }
    let since = q
        .get("sinceSeconds")
        .and_then(|s| s.parse::<i64>().ok())
        .map(|s| Utc::now() - chrono::Duration::seconds(s));
    let stamps = q.get("timestamps").is_some_and(|t| t == "true");
    let format = move |(ts, line): &(DateTime<Utc>, String)| {
        if stamps {
            format!(
                "{} {line}\n",
                ts.to_rfc3339_opts(SecondsFormat::Nanos, true)
            )
        } else {
            format!("{line}\n")
        }
    };
    let keep = move |ts: &DateTime<Utc>| since.is_none_or(|s| *ts >= s);
    let follow = q.get("follow").is_some_and(|f| f == "true");
    if !follow {
        let inner = fake.inner.lock().unwrap();
        let text: String = inner.logs[&name]
            .lines
            .iter()
            .filter(|(ts, _)| keep(ts))
            .map(format)
            .collect();
        return text.into_response();
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(16);
    tokio::spawn(async move {
        let mut sent = 0usize;
        let mut lines_out = 0usize;
        loop {
            let notified = fake.changed.notified();
            let (batch, finished) = {
                let inner = fake.inner.lock().unwrap();
                let Some(log) = inner.logs.get(&name) else {
                    return;
                };
                (log.lines[sent..].to_vec(), log.finished)
            };
            for entry in &batch {
                sent += 1;
                if !keep(&entry.0) {
                    continue;
                }
                let text = format(entry);
                if first_follow && drop_after == Some(lines_out) {
                    // half a line, then the connection breaks
                    let _ = tx
                        .send(Ok(Bytes::from(text[..text.len() / 2].to_string())))
                        .await;
                    let _ = tx
                        .send(Err(std::io::Error::other("connection reset")))
                        .await;
                    return;
                }
                lines_out += 1;
                if tx.send(Ok(Bytes::from(text))).await.is_err() {
                    return;
                }
            }
            if finished {
                return;
            }
            let _ = tokio::time::timeout(Duration::from_millis(200), notified).await;
        }
    });
    let stream =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) });
    Response::builder()
        .header("content-type", "text/plain")
        .body(Body::from_stream(stream))
        .unwrap()
}

pub(super) async fn list_jobs(State(fake): State<FakeK8s>, Query(q): Q) -> Response {
    let inner = fake.inner.lock().unwrap();
    if let Some(code) = inner.faults.list_jobs {
        return status(
            code,
            "InternalError",
            "etcdserver: request timed out".into(),
        );
    }
    let items: Vec<&Job> = inner
        .jobs
        .values()
        .filter(|j| matches(j.metadata.labels.as_ref(), q.get("labelSelector")))
        .collect();
    Json(json!({"kind": "JobList", "apiVersion": "batch/v1", "metadata": {"resourceVersion": "1"}, "items": items})).into_response()
}

pub(super) fn valid_label(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

pub(super) async fn create_job(
    State(fake): State<FakeK8s>,
    Path(ns): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    let job: Job = match serde_json::from_value(body) {
        Ok(j) => j,
        Err(e) => return status(400, "BadRequest", format!("decoding the Job: {e}")),
    };
    let name = job.metadata.name.clone().unwrap_or_default();
    let labels = job.metadata.labels.clone().unwrap_or_default();
    if name.len() > 63
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        || labels.values().any(|v| !valid_label(v))
    {
        return status(422, "Invalid", format!("Job.batch \"{name}\" is invalid"));
    }
    let (uid, pod_name) = {
        let mut inner = fake.inner.lock().unwrap();
        if inner.jobs.contains_key(&name) {
            return status(
                409,
                "AlreadyExists",
                format!("jobs.batch \"{name}\" already exists"),
            );
        }
        inner.next_id += 1;
        let uid = format!("00000000-0000-0000-0000-{:012}", inner.next_id);
        let pod_name = format!("{name}-{:05}", inner.next_id);
        (uid, pod_name)
    };
    let mut v = serde_json::to_value(&job).unwrap();
    v["metadata"]["uid"] = json!(uid);
    v["metadata"]["resourceVersion"] = json!("1");
    v["metadata"]["creationTimestamp"] = json!(now());
    v["metadata"]["generation"] = json!(1);
    v["spec"]["completions"] = json!(1);
    v["spec"]["parallelism"] = json!(1);
    v["spec"]["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
    for (k, val) in [
        ("batch.kubernetes.io/controller-uid", &uid),
        ("batch.kubernetes.io/job-name", &name),
        ("controller-uid", &uid),
        ("job-name", &name),
    ] {
        v["spec"]["template"]["metadata"]["labels"][k] = json!(val);
    }
    v["status"] = json!({});
    let stored: Job = serde_json::from_value(v.clone()).unwrap();
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod_name, "namespace": ns, "labels": v["spec"]["template"]["metadata"]["labels"]},
        "spec": v["spec"]["template"]["spec"],
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}],
                   "initContainerStatuses": [{"name": "write-prompt", "ready": false, "restartCount": 0, "image": "busybox:1.36", "imageID": "",
                        "state": {"waiting": {"reason": "PodInitializing"}}}]}});
    pod["metadata"]["uid"] = json!(format!("{uid}-pod"));
    let pod: Pod = serde_json::from_value(pod).unwrap();
    fake.edit(|i| {
        i.jobs.insert(name.clone(), stored);
        i.pods.insert(pod_name.clone(), pod);
        i.logs.insert(
            pod_name.clone(),
            PodLog {
                lines: Vec::new(),
                started: false,
                finished: false,
            },
        );
    });
    if let Some(secs) = v["spec"]["activeDeadlineSeconds"].as_u64() {
        tokio::spawn(fake.clone().deadline(name.clone(), pod_name.clone(), secs));
    }
    tokio::spawn(fake.clone().run_job(name, pod_name));
    (StatusCode::CREATED, Json(v)).into_response()
}

pub(super) async fn get_job(
    State(fake): State<FakeK8s>,
    Path((_ns, name)): Path<(String, String)>,
) -> Response {
    if let Some(code) = fake.inner.lock().unwrap().faults.get_job {
        return status(code, "InternalError", "etcdserver: leader changed".into());
    }
    match fake.inner.lock().unwrap().jobs.get(&name) {
        Some(j) => Json(j.clone()).into_response(),
        None => not_found("jobs.batch", &name),
    }
}

pub(super) async fn delete_job(
    State(fake): State<FakeK8s>,
    Path((_ns, name)): Path<(String, String)>,
) -> Response {
    let removed = fake.edit(|i| {
        let job = i.jobs.remove(&name)?;
        let pods: Vec<String> = i
            .pods
            .iter()
            .filter(|(_, p)| {
                p.metadata.labels.as_ref().and_then(|l| l.get("job-name")) == Some(&name)
            })
            .map(|(n, _)| n.clone())
            .collect();
        for p in pods {
            i.pods.remove(&p);
            if let Some(log) = i.logs.get_mut(&p) {
                log.finished = true;
            }
        }
        Some(job)
    });
    match removed {
        Some(job) => {
            let mut v = serde_json::to_value(job).unwrap();
            v["metadata"]["deletionTimestamp"] = json!(now());
            Json(v).into_response()
        }
        None => not_found("jobs.batch", &name),
    }
}

pub(super) async fn create_secret(
    State(fake): State<FakeK8s>,
    Json(body): Json<Value>,
) -> Response {
    let mut secret: Secret = serde_json::from_value(body).unwrap();
    let name = secret.metadata.name.clone().unwrap_or_default();
    // stringData is write-only: stored as data, never echoed.
    let data = secret.string_data.take().unwrap_or_default();
    secret.data = Some(
        data.into_iter()
            .map(|(k, v)| (k, k8s_openapi::ByteString(v.into_bytes())))
            .collect(),
    );
    fake.edit(|i| i.secrets.insert(name, secret.clone()));
    (StatusCode::CREATED, Json(secret)).into_response()
}

pub(super) async fn get_secret(
    State(fake): State<FakeK8s>,
    Path((_ns, name)): Path<(String, String)>,
) -> Response {
    match fake.inner.lock().unwrap().secrets.get(&name) {
        Some(s) => Json(s.clone()).into_response(),
        None => not_found("secrets", &name),
    }
}

/// A JSON merge patch of a Secret's metadata (what the adapter sends).
pub(super) async fn patch_secret(
    State(fake): State<FakeK8s>,
    Path((_ns, name)): Path<(String, String)>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let kind = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if kind != "application/merge-patch+json" {
        return status(
            415,
            "UnsupportedMediaType",
            format!("the body of the request was in an unknown format: {kind}"),
        );
    }
    let patch: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let patched = fake.edit(|i| {
        let secret = i.secrets.get_mut(&name)?;
        let mut v = serde_json::to_value(&*secret).unwrap();
        if let Some(refs) = patch.pointer("/metadata/ownerReferences") {
            v["metadata"]["ownerReferences"] = refs.clone();
        }
        *secret = serde_json::from_value(v).unwrap();
        Some(secret.clone())
    });
    match patched {
        Some(s) => Json(s).into_response(),
        None => not_found("secrets", &name),
    }
}

pub(super) async fn delete_secret(
    State(fake): State<FakeK8s>,
    Path((_ns, name)): Path<(String, String)>,
) -> Response {
    match fake.edit(|i| i.secrets.remove(&name)) {
        Some(_) => Json(
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                               "details": {"name": name, "kind": "secrets"}}),
        )
        .into_response(),
        None => not_found("secrets", &name),
    }
}

pub(super) async fn get_pvc(Path((ns, name)): Path<(String, String)>) -> Response {
    if name != "paperclip-data" {
        return not_found("persistentvolumeclaims", &name);
    }
    let pvc: PersistentVolumeClaim =
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "20Gi"}}},
        "status": {"phase": "Bound"}}))
        .unwrap();
    Json(pvc).into_response()
}

pub(super) async fn review(State(fake): State<FakeK8s>, Json(body): Json<Value>) -> Response {
    let attrs = &body["spec"]["resourceAttributes"];
    let verb = attrs["verb"].as_str().unwrap_or_default().to_string();
    let mut resource = attrs["resource"].as_str().unwrap_or_default().to_string();
    if let Some(sub) = attrs["subresource"].as_str().filter(|s| !s.is_empty()) {
        resource = format!("{resource}/{sub}");
    }
    let denied = fake
        .inner
        .lock()
        .unwrap()
        .faults
        .denied
        .contains(&(verb, resource));
    let mut out = json!({"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
        "metadata": {}, "spec": body["spec"], "status": {"allowed": !denied}});
    if denied {
        out["status"]["reason"] = json!("no RBAC policy matched");
    }
    (StatusCode::CREATED, Json(out)).into_response()
}
