//! A fake Kubernetes API server for the `claude_k8s` / `opencode_k8s`
//! tests. It speaks the real API's paths and JSON (bodies are k8s-openapi
//! types, errors are `Status` objects) and plays the Job controller and the
//! kubelet: a created Job gets a pod that passes through Pending and its
//! init container, prints the scripted CLI output as its log (followable,
//! with `sinceSeconds` and `timestamps`), exits with the scripted code, and
//! then, after a lag, the Job gets its terminal conditions. Faults are
//! switched on per test; every request is recorded for assertions.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, SecondsFormat, Utc};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret};
use serde_json::{json, Value};
use tokio::sync::Notify;

#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: String,
    pub body: Value,
}

/// What the pod of the next Job does.
#[derive(Clone, Default)]
pub struct Script {
    pub lines: Vec<String>,
    pub exit_code: i32,
    /// Keep running after `lines` until [`FakeK8s::release`] (then print
    /// `after_release` and exit) or until the Job is deleted.
    pub hold: bool,
    pub after_release: Vec<String>,
}

#[derive(Default)]
pub struct Faults {
    /// Status code answered to a Job list (the concurrency guard).
    pub list_jobs: Option<u16>,
    /// The main container's image cannot be pulled.
    pub image_pull: bool,
    /// No node can take the pod.
    pub unschedulable: bool,
    /// Status code answered to every read of a Job.
    pub get_job: Option<u16>,
    /// Every follow stream breaks (not only the first).
    pub drop_every_follow: bool,
    /// The first follow stream breaks after this many lines, in the middle
    /// of the next one.
    pub drop_log_after: Option<usize>,
    /// SelfSubjectAccessReviews denied, as (verb, resource[/sub]).
    pub denied: BTreeSet<(String, String)>,
}

struct PodLog {
    lines: Vec<(DateTime<Utc>, String)>,
    started: bool,
    finished: bool,
}

#[derive(Default)]
struct Inner {
    jobs: BTreeMap<String, Job>,
    pods: BTreeMap<String, Pod>,
    logs: HashMap<String, PodLog>,
    secrets: BTreeMap<String, Secret>,
    requests: Vec<Recorded>,
    follows: usize,
    script: Script,
    released: bool,
    faults: Faults,
    next_id: u64,
}

#[derive(Clone)]
pub struct FakeK8s {
    inner: Arc<Mutex<Inner>>,
    changed: Arc<Notify>,
    pub url: String,
}

pub const NAMESPACE: &str = "paperclip";
pub const SELF_POD: &str = "paperclip-0";
pub const API_URL_IN_CLUSTER: &str = "http://paperclip.paperclip.svc:3100";

fn status(code: u16, reason: &str, message: String) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": message, "reason": reason, "code": code});
    (StatusCode::from_u16(code).unwrap(), Json(body)).into_response()
}

fn not_found(kind: &str, name: &str) -> Response {
    status(404, "NotFound", format!("{kind} \"{name}\" not found"))
}

fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn matches(labels: Option<&BTreeMap<String, String>>, selector: Option<&String>) -> bool {
    let Some(selector) = selector.filter(|s| !s.is_empty()) else {
        return true;
    };
    selector.split(',').all(|term| match term.split_once('=') {
        Some((k, v)) => labels.and_then(|l| l.get(k)).is_some_and(|x| x == v),
        None => labels.is_some_and(|l| l.contains_key(term)),
    })
}

impl FakeK8s {
    pub async fn start() -> FakeK8s {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let fake = FakeK8s {
            inner: Arc::default(),
            changed: Arc::new(Notify::new()),
            url,
        };
        let app = Router::new()
            .route("/api/v1/namespaces/{ns}", get(namespace))
            .route("/api/v1/namespaces/{ns}/pods", get(list_pods))
            .route("/api/v1/namespaces/{ns}/pods/{name}", get(get_pod))
            .route("/api/v1/namespaces/{ns}/pods/{name}/log", get(pod_log))
            .route(
                "/apis/batch/v1/namespaces/{ns}/jobs",
                get(list_jobs).post(create_job),
            )
            .route(
                "/apis/batch/v1/namespaces/{ns}/jobs/{name}",
                get(get_job).delete(delete_job),
            )
            .route("/api/v1/namespaces/{ns}/secrets", post(create_secret))
            .route(
                "/api/v1/namespaces/{ns}/secrets/{name}",
                get(get_secret).delete(delete_secret),
            )
            .route(
                "/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}",
                get(get_pvc),
            )
            .route(
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                post(review),
            )
            .fallback(|req: Request| async move {
                status(
                    404,
                    "NotFound",
                    format!(
                        "the server could not find the requested resource {}",
                        req.uri()
                    ),
                )
            })
            .layer(middleware::from_fn_with_state(fake.clone(), record))
            .with_state(fake.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        fake
    }

    /// A kubeconfig naming this server, for `KUBECONFIG`.
    pub fn kubeconfig(&self, dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("kubeconfig.yaml");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\nusers:\n- name: fake\n  user:\n    token: fake-token\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: {NAMESPACE}\ncurrent-context: fake\n",
            self.url
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn script(&self, script: Script) {
        self.inner.lock().unwrap().script = script;
    }

    /// Lets held pods go on to their end.
    pub fn release(&self) {
        self.edit(|i| i.released = true);
    }

    pub fn faults(&self, f: impl FnOnce(&mut Faults)) {
        f(&mut self.inner.lock().unwrap().faults);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.inner.lock().unwrap().requests.clone()
    }

    pub fn job_names(&self) -> Vec<String> {
        self.inner.lock().unwrap().jobs.keys().cloned().collect()
    }

    pub fn running_pods(&self) -> usize {
        let inner = self.inner.lock().unwrap();
        inner
            .logs
            .values()
            .filter(|l| l.started && !l.finished)
            .count()
    }

    fn edit<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        let out = f(&mut self.inner.lock().unwrap());
        self.changed.notify_waiters();
        out
    }

    /// The kubelet and Job controller for one Job.
    async fn run_job(self, job: String, pod: String) {
        let step = Duration::from_millis(40);
        let script = self.inner.lock().unwrap().script.clone();
        let image_pull = self.inner.lock().unwrap().faults.image_pull;
        let unschedulable = self.inner.lock().unwrap().faults.unschedulable;
        tokio::time::sleep(step).await;
        if unschedulable {
            self.set_pod(&pod, |p| {
                p["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False",
                    "reason": "Unschedulable", "message": "0/3 nodes are available: 3 Insufficient cpu."}]);
            });
            return;
        }
        self.set_pod(&pod, |p| {
            p["status"]["initContainerStatuses"] = json!([{"name": "write-prompt", "ready": false, "restartCount": 0,
                "image": "busybox:1.36", "imageID": "",
                "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]);
        });
        tokio::time::sleep(step).await;
        if image_pull {
            self.set_pod(&pod, |p| {
                p["status"]["containerStatuses"] = json!([{"name": "claude", "ready": false, "restartCount": 0,
                    "image": "ghcr.io/example/paperclip:1.0.0", "imageID": "",
                    "state": {"waiting": {"reason": "ImagePullBackOff",
                        "message": "Back-off pulling image \"ghcr.io/example/paperclip:1.0.0\""}}}]);
            });
            return;
        }
        self.set_pod(&pod, |p| {
            p["status"]["phase"] = json!("Running");
            p["status"]["containerStatuses"] = json!([{"name": "claude", "ready": true, "restartCount": 0,
                "image": "ghcr.io/example/paperclip:1.0.0", "imageID": "",
                "state": {"running": {"startedAt": now()}}}]);
        });
        self.edit(|i| {
            i.logs.get_mut(&pod).unwrap().started = true;
            if let Some(j) = i.jobs.get_mut(&job) {
                let mut v = serde_json::to_value(&*j).unwrap();
                v["status"] = json!({"active": 1, "ready": 1, "startTime": now()});
                *j = serde_json::from_value(v).unwrap();
            }
        });
        if !self.print(&pod, &script.lines).await {
            return;
        }
        if script.hold {
            loop {
                let notified = self.changed.notified();
                let (released, alive) = {
                    let i = self.inner.lock().unwrap();
                    (i.released, i.logs.get(&pod).is_some_and(|l| !l.finished))
                };
                if !alive {
                    return;
                }
                if released {
                    break;
                }
                let _ = tokio::time::timeout(Duration::from_millis(200), notified).await;
            }
            if !self.print(&pod, &script.after_release).await {
                return;
            }
        }
        tokio::time::sleep(step).await;
        let code = script.exit_code;
        self.set_pod(&pod, |p| {
            p["status"]["phase"] = json!(if code == 0 { "Succeeded" } else { "Failed" });
            p["status"]["containerStatuses"][0]["ready"] = json!(false);
            p["status"]["containerStatuses"][0]["state"] = json!({"terminated": {"exitCode": code,
                "reason": if code == 0 { "Completed" } else { "Error" }, "startedAt": now(), "finishedAt": now()}});
        });
        self.edit(|i| {
            if let Some(log) = i.logs.get_mut(&pod) {
                log.finished = true;
            }
        });
        // From 1.31 the controller announces the outcome before the
        // terminal condition; the adapter must wait for the latter.
        let (first, last, reason) = if code == 0 {
            ("SuccessCriteriaMet", "Complete", "CompletionsReached")
        } else {
            ("FailureTarget", "Failed", "BackoffLimitExceeded")
        };
        for types in [vec![first], vec![first, last]] {
            tokio::time::sleep(Duration::from_millis(150)).await;
            self.edit(|i| {
                if let Some(j) = i.jobs.get_mut(&job) {
                    let conditions: Vec<Value> = types
                        .iter()
                        .map(|t| {
                            json!({"type": t, "status": "True",
                        "reason": reason, "message": "Reached expected number of succeeded pods",
                        "lastProbeTime": now(), "lastTransitionTime": now()})
                        })
                        .collect();
                    let mut v = serde_json::to_value(&*j).unwrap();
                    v["status"] = json!({"startTime": now(), "ready": 0, "terminating": 0,
                        "uncountedTerminatedPods": {}, "conditions": conditions});
                    if types.len() == 2 {
                        v["status"]["completionTime"] = json!(now());
                        v["status"][if code == 0 { "succeeded" } else { "failed" }] = json!(1);
                    }
                    *j = serde_json::from_value(v).unwrap();
                }
            });
        }
    }

    /// Appends `lines` to the pod's log; `false` once the pod is gone.
    async fn print(&self, pod: &str, lines: &[String]) -> bool {
        for line in lines {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let alive = self.edit(|i| match i.logs.get_mut(pod) {
                Some(log) if !log.finished => {
                    log.lines.push((Utc::now(), line.clone()));
                    true
                }
                _ => false,
            });
            if !alive {
                return false;
            }
        }
        true
    }

    fn set_pod(&self, name: &str, f: impl FnOnce(&mut Value)) {
        self.edit(|i| {
            if let Some(p) = i.pods.get_mut(name) {
                let mut v = serde_json::to_value(&*p).unwrap();
                f(&mut v);
                *p = serde_json::from_value(v).unwrap();
            }
        });
    }
}

async fn record(State(fake): State<FakeK8s>, req: Request, next: Next) -> Response {
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

type Q = Query<HashMap<String, String>>;

pub fn self_pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": SELF_POD, "namespace": NAMESPACE, "uid": "11111111-2222-3333-4444-555555555555"},
      "spec": {"serviceAccountName": "paperclip",
        "imagePullSecrets": [{"name": "regcred"}],
        "dnsConfig": {"nameservers": ["10.0.0.10"], "searches": ["paperclip.svc.cluster.local"], "options": [{"name": "ndots", "value": "2"}]},
        "containers": [{"name": "paperclip", "image": "ghcr.io/example/paperclip:1.0.0",
          "env": [{"name": "PAPERCLIP_API_URL", "value": API_URL_IN_CLUSTER},
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

async fn namespace(Path(ns): Path<String>) -> Response {
    if ns != NAMESPACE {
        return not_found("namespaces", &ns);
    }
    Json(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}, "status": {"phase": "Active"}})).into_response()
}

async fn get_pod(
    State(fake): State<FakeK8s>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    if ns == NAMESPACE && name == SELF_POD {
        return Json(self_pod()).into_response();
    }
    match fake.inner.lock().unwrap().pods.get(&name) {
        Some(p) => Json(p.clone()).into_response(),
        None => not_found("pods", &name),
    }
}

async fn list_pods(State(fake): State<FakeK8s>, Query(q): Q) -> Response {
    let inner = fake.inner.lock().unwrap();
    let items: Vec<&Pod> = inner
        .pods
        .values()
        .filter(|p| matches(p.metadata.labels.as_ref(), q.get("labelSelector")))
        .collect();
    Json(json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items})).into_response()
}

async fn pod_log(
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
            format!("container \"claude\" in pod \"{name}\" is waiting to start: PodInitializing"),
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
    if !q.get("follow").is_some_and(|f| f == "true") {
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

async fn list_jobs(State(fake): State<FakeK8s>, Query(q): Q) -> Response {
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

fn valid_label(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

async fn create_job(
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
    tokio::spawn(fake.clone().run_job(name, pod_name));
    (StatusCode::CREATED, Json(v)).into_response()
}

async fn get_job(
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

async fn delete_job(
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

async fn create_secret(State(fake): State<FakeK8s>, Json(body): Json<Value>) -> Response {
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

async fn get_secret(
    State(fake): State<FakeK8s>,
    Path((_ns, name)): Path<(String, String)>,
) -> Response {
    match fake.inner.lock().unwrap().secrets.get(&name) {
        Some(s) => Json(s.clone()).into_response(),
        None => not_found("secrets", &name),
    }
}

async fn delete_secret(
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

async fn get_pvc(Path((ns, name)): Path<(String, String)>) -> Response {
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

async fn review(State(fake): State<FakeK8s>, Json(body): Json<Value>) -> Response {
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
