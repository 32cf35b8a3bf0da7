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

mod routes;
use routes::*;

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
    /// A finished Job is removed at once with its pod (a TTL of 0, or
    /// someone's kubectl delete), before its conditions are read.
    pub vanish: bool,
    /// The first follow stream breaks after this many lines, in the middle
    /// of the next one.
    pub drop_log_after: Option<usize>,
    /// The main container passes its memory limit after its lines: the
    /// kernel kills it (`OOMKilled`, exit 137).
    pub oom_kill: bool,
    /// SelfSubjectAccessReviews denied, as (verb, resource[/sub]).
    pub denied: BTreeSet<(String, String)>,
}

struct PodLog {
    lines: Vec<(DateTime<Utc>, String)>,
    started: bool,
    finished: bool,
}

/// Runs a Job's main container as a local process instead of printing a
/// script: its real command line and env, with the pod's paths mapped here.
#[derive(Clone)]
pub struct LocalKubelet {
    /// What the pod's `HOME` (the shared volume's root) holds for the CLI.
    pub home: std::path::PathBuf,
    /// The kubelet's own files (prompts, containers' filesystems), and the
    /// shared volume unless [`FakeK8s::share_volume`] names another.
    pub workdir: std::path::PathBuf,
}

#[derive(Default)]
struct Inner {
    /// The control plane's `PAPERCLIP_API_URL` as its pod spec says.
    api_url: String,
    local: Option<LocalKubelet>,
    /// Where the control plane's PersistentVolumeClaim is on this machine.
    volume: Option<std::path::PathBuf>,
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
            inner: Arc::new(Mutex::new(Inner {
                api_url: API_URL_IN_CLUSTER.to_string(),
                ..Inner::default()
            })),
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
                get(get_secret).delete(delete_secret).patch(patch_secret),
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

    /// Where the control plane says it is reached (its pod's env).
    pub fn set_api_url(&self, url: &str) {
        self.inner.lock().unwrap().api_url = url.to_string();
    }

    pub fn run_locally(&self, kubelet: LocalKubelet) {
        self.inner.lock().unwrap().local = Some(kubelet);
    }

    /// The directory of this machine that the control plane's claim
    /// (`paperclip-data`) is: a pod mounting it at `/paperclip` sees it
    /// there. The host's own `/paperclip` makes it the same path in the
    /// control plane (the server on this machine) and in the Job, as a PVC
    /// mounted at `/paperclip` in both is.
    pub fn share_volume(&self, dir: &std::path::Path) {
        self.inner.lock().unwrap().volume = Some(dir.to_path_buf());
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
        // The main container's name, as the Job's spec gives it.
        let main = self.inner.lock().unwrap().pods[&pod]
            .spec
            .as_ref()
            .map(|s| s.containers[0].name.clone())
            .unwrap_or_default();
        let main = main.as_str();
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
                p["status"]["containerStatuses"] = json!([{"name": main, "ready": false, "restartCount": 0,
                    "image": "ghcr.io/example/paperclip:1.0.0", "imageID": "",
                    "state": {"waiting": {"reason": "ImagePullBackOff",
                        "message": "Back-off pulling image \"ghcr.io/example/paperclip:1.0.0\""}}}]);
            });
            return;
        }
        self.set_pod(&pod, |p| {
            p["status"]["phase"] = json!("Running");
            p["status"]["containerStatuses"] = json!([{"name": main, "ready": true, "restartCount": 0,
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
        let local = self.inner.lock().unwrap().local.clone();
        let mut code = script.exit_code;
        if let Some(kubelet) = local {
            match self.run_local(&pod, &kubelet).await {
                Some(c) => code = c,
                None => return,
            }
        } else if !self.print(&pod, &script.lines).await {
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
        if self.inner.lock().unwrap().faults.oom_kill {
            return self.terminate(&job, &pod, 137, Some("OOMKilled")).await;
        }
        self.terminate(&job, &pod, code, None).await;
    }

    /// `activeDeadlineSeconds`: a Job still running then is killed and
    /// fails with `DeadlineExceeded`.
    pub(crate) async fn deadline(self, job: String, pod: String, secs: u64) {
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let running = self
            .inner
            .lock()
            .unwrap()
            .logs
            .get(&pod)
            .is_some_and(|l| !l.finished);
        if running {
            self.terminate(&job, &pod, 137, Some("DeadlineExceeded"))
                .await;
        }
    }

    /// The container exits with `code`; after the controller's lag the Job
    /// gets its conditions (`reason` overrides the failure's, or, for
    /// `OOMKilled`, the container's).
    async fn terminate(&self, job: &str, pod: &str, code: i32, reason: Option<&str>) {
        let (job, pod) = (job.to_string(), pod.to_string());
        let oom = reason == Some("OOMKilled");
        let reason = reason.filter(|_| !oom);
        self.set_pod(&pod, |p| {
            p["status"]["phase"] = json!(if code == 0 { "Succeeded" } else { "Failed" });
            p["status"]["containerStatuses"][0]["ready"] = json!(false);
            p["status"]["containerStatuses"][0]["state"] = json!({"terminated": {"exitCode": code,
                "reason": if code == 0 { "Completed" } else if oom { "OOMKilled" } else { "Error" },
                "startedAt": now(), "finishedAt": now()}});
        });
        self.edit(|i| {
            if let Some(log) = i.logs.get_mut(&pod) {
                log.finished = true;
            }
        });
        if self.inner.lock().unwrap().faults.vanish {
            self.edit(|i| {
                i.jobs.remove(&job);
                i.pods.remove(&pod);
            });
            return;
        }
        // From 1.31 the controller announces the outcome before the
        // terminal condition; the adapter must wait for the latter.
        let (first, last, reason) = if code == 0 {
            ("SuccessCriteriaMet", "Complete", "CompletionsReached")
        } else {
            (
                "FailureTarget",
                "Failed",
                reason.unwrap_or("BackoffLimitExceeded"),
            )
        };
        let message = if reason == "DeadlineExceeded" {
            "Job was active longer than specified deadline"
        } else if code == 0 {
            "Reached expected number of succeeded pods"
        } else {
            "Job has reached the specified backoff limit"
        };
        for types in [vec![first], vec![first, last]] {
            tokio::time::sleep(Duration::from_millis(150)).await;
            self.edit(|i| {
                if let Some(j) = i.jobs.get_mut(&job) {
                    let conditions: Vec<Value> = types
                        .iter()
                        .map(|t| {
                            json!({"type": t, "status": "True",
                        "reason": reason, "message": message,
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

    /// The pod's main container as a local process; its exit code, or
    /// `None` when the pod was deleted (and the process killed).
    async fn run_local(&self, pod: &str, k: &LocalKubelet) -> Option<i32> {
        let spec = self.inner.lock().unwrap().pods[pod].spec.clone().unwrap();
        let init = &spec.init_containers.as_ref().unwrap()[0];
        let prompt = init
            .env
            .iter()
            .flatten()
            .find(|e| e.name == "PROMPT_CONTENT")
            .and_then(|e| e.value.clone())
            .unwrap_or_default();
        std::fs::create_dir_all(&k.workdir).unwrap();
        let cwd = self.host_path(pod, &spec, k);
        std::fs::create_dir_all(&cwd).unwrap();
        let prompt_file = k.workdir.join(format!("{pod}.prompt.txt"));
        std::fs::write(&prompt_file, prompt).unwrap();
        let main = &spec.containers[0];
        let script = main.command.as_ref().unwrap()[2]
            .replace("/tmp/prompt/prompt.txt", prompt_file.to_str().unwrap());
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c").arg(script).env_clear();
        cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
        for e in main.env.iter().flatten() {
            if let Some(v) = &e.value {
                cmd.env(&e.name, v);
            }
            // As the kubelet does: a Secret's key by reference.
            let key = e
                .value_from
                .as_ref()
                .and_then(|f| f.secret_key_ref.as_ref());
            if let Some(key) = key {
                let inner = self.inner.lock().unwrap();
                let value = inner
                    .secrets
                    .get(&key.name)
                    .and_then(|s| s.data.as_ref()?.get(&key.key).cloned());
                if let Some(v) = value {
                    cmd.env(&e.name, String::from_utf8_lossy(&v.0).to_string());
                }
            }
        }
        // The pod runs as uid 1000; a test machine's root must tell Claude
        // Code it is sandboxed to skip permissions the same way.
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            cmd.env("IS_SANDBOX", "1");
        }
        cmd.env("HOME", &k.home)
            .current_dir(&cwd)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().unwrap();
        let readers = [
            self.pipe(pod, child.stdout.take().unwrap()),
            self.pipe(pod, child.stderr.take().unwrap()),
        ];
        loop {
            tokio::select! {
                status = child.wait() => {
                    for r in readers {
                        let _ = r.await;
                    }
                    return Some(status.unwrap().code().unwrap_or(137));
                }
                _ = tokio::time::sleep(Duration::from_millis(100)) => {
                    let gone = self.inner.lock().unwrap().logs.get(pod).is_none_or(|l| l.finished);
                    if gone {
                        let _ = child.kill().await;
                        return None;
                    }
                }
            }
        }
    }

    /// Where the main container's `workingDir` is on this machine: under a
    /// PersistentVolumeClaim the pod mounts at `/paperclip`, in the shared
    /// volume's directory; anywhere else in the container's own filesystem,
    /// which holds nothing of the control plane's (the container runtime
    /// makes a missing working directory, empty).
    fn host_path(
        &self,
        pod: &str,
        spec: &k8s_openapi::api::core::v1::PodSpec,
        k: &LocalKubelet,
    ) -> std::path::PathBuf {
        let main = &spec.containers[0];
        let dir = main.working_dir.clone().unwrap_or_else(|| "/".into());
        let claimed = |name: &str| {
            spec.volumes
                .iter()
                .flatten()
                .any(|v| v.name == name && v.persistent_volume_claim.is_some())
        };
        let mounted = main
            .volume_mounts
            .iter()
            .flatten()
            .any(|m| m.mount_path == "/paperclip" && claimed(&m.name));
        if mounted {
            if let Ok(rest) = std::path::Path::new(&dir).strip_prefix("/paperclip") {
                let volume = self.inner.lock().unwrap().volume.clone();
                return volume.unwrap_or_else(|| k.workdir.clone()).join(rest);
            }
        }
        k.workdir
            .join(format!("{pod}.rootfs"))
            .join(dir.trim_start_matches('/'))
    }

    /// A process's output into the pod's log, line by line.
    fn pipe(
        &self,
        pod: &str,
        from: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        use tokio::io::AsyncBufReadExt;
        let (fake, pod) = (self.clone(), pod.to_string());
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(from).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                fake.print(&pod, &[line]).await;
            }
        })
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
