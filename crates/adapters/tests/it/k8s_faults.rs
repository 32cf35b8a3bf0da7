//! The Kubernetes adapter's failure paths against the fake API server
//! (shared with the black-box suite), with its timers in milliseconds: a
//! Job whose state cannot be read, an unschedulable pod, a prompt too large
//! for an env var, a failed CLI, a log stream that never holds.

use crate::fake;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fake::{FakeK8s, Script};
use paperclip_adapters::k8s::logs::Timings;
use paperclip_adapters::k8s::K8sAdapter;
use paperclip_adapters::{
    cli, Adapter, CancellationToken, ErrorCode, Invocation, Outcome, OutcomeStatus, RunSink, Stream,
};
use serde_json::{json, Value};

#[derive(Default)]
struct Sink {
    log: Mutex<String>,
}

impl RunSink for Sink {
    fn log(&self, _stream: Stream, chunk: &str) {
        self.log.lock().unwrap().push_str(chunk);
    }
    fn event(&self, _t: &str, _level: &str, _message: &str, _payload: Value) {}
    fn process_started(&self, _pid: u32, _pgid: u32) {}
}

fn claude_result(exit_ok: bool) -> Vec<String> {
    vec![
        json!({"type": "system", "subtype": "init", "session_id": "s1", "model": "claude-sonnet-4-5"}).to_string(),
        json!({"type": "result", "subtype": if exit_ok { "success" } else { "error_during_execution" },
               "is_error": !exit_ok, "result": if exit_ok { "ok" } else { "the tool broke" },
               "session_id": "s1", "usage": {"input_tokens": 3, "output_tokens": 1}}).to_string(),
    ]
}

fn adapter() -> K8sAdapter<cli::claude::Claude> {
    K8sAdapter::new("claude_k8s", cli::claude::Claude).with_timings(Timings {
        poll: Duration::from_millis(50),
        reconnect_delay: Duration::from_millis(10),
        keepalive: Duration::from_millis(200),
        pod_wait: Duration::from_secs(5),
        recheck: Duration::from_millis(600),
        stop_grace: Duration::from_millis(200),
    })
}

fn invocation(fake: &FakeK8s, run_id: &str, prompt: &str) -> Invocation {
    let port = fake.url.rsplit(':').next().unwrap();
    let dir = std::env::temp_dir().join(format!("k8s-faults-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = fake.kubeconfig(&dir);
    Invocation {
        run_id: run_id.into(),
        agent_id: "agent-1".into(),
        agent_name: "Pod Coder".into(),
        company_id: "co-1".into(),
        config: json!({"kubeconfig": kubeconfig, "image": "ghcr.io/example/paperclip:1.0.0", "namespace": fake::NAMESPACE}),
        env: [("PAPERCLIP_RUN_ID".to_string(), run_id.to_string())].into(),
        prompt: Some(prompt.to_string()),
        context: json!({}),
        default_cwd: PathBuf::from("/paperclip/workspaces/agent-1"),
        cancel: CancellationToken::new(),
        stop_now: CancellationToken::new(),
        session_id: None,
        skills_dir: None,
    }
}

async fn run(fake: &FakeK8s, prompt: &str) -> (Outcome, String) {
    let sink = Arc::new(Sink::default());
    let outcome = tokio::time::timeout(
        Duration::from_secs(20),
        adapter().invoke(invocation(fake, "run-1", prompt), sink.clone()),
    )
    .await
    .expect("the run ended");
    let log = sink.log.lock().unwrap().clone();
    (outcome, log)
}

fn count(fake: &FakeK8s, method: &str, part: &str) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.method == method && r.path.contains(part))
        .count()
}

async fn fake_with(script: Script) -> FakeK8s {
    let fake = FakeK8s::start().await;
    fake.script(script);
    fake
}

fn script(lines: Vec<String>, exit_code: i32) -> Script {
    Script {
        lines,
        exit_code,
        hold: false,
        after_release: vec![],
    }
}

#[tokio::test]
async fn a_job_whose_state_cannot_be_read_is_kept_as_a_state_mismatch() {
    let fake = fake_with(script(claude_result(true), 0)).await;
    fake.faults(|f| f.get_job = Some(500));
    let (outcome, log) = run(&fake, "hi").await;
    assert_eq!(
        outcome.error_code,
        Some(ErrorCode::K8sJobStateMismatch),
        "{outcome:?}"
    );
    assert!(log.contains("Retaining job"), "{log}");
    assert_eq!(count(&fake, "DELETE", "/jobs/"), 0, "the Job must be kept");
    assert_eq!(fake.job_names().len(), 1);
}

#[tokio::test]
async fn an_unschedulable_pod_fails_with_its_cause_and_the_job_is_removed() {
    let fake = fake_with(script(claude_result(true), 0)).await;
    fake.faults(|f| f.unschedulable = true);
    let (outcome, _) = run(&fake, "hi").await;
    assert_eq!(outcome.error_code, Some(ErrorCode::K8sPodScheduleFailed));
    let error = outcome.error.unwrap();
    assert!(
        error.contains("0/3 nodes are available") && error.contains("nodeSelector"),
        "{error}"
    );
    assert!(fake.job_names().is_empty());
}

#[tokio::test]
async fn a_large_prompt_goes_through_a_secret_made_before_the_job_and_deleted_after() {
    let fake = fake_with(script(claude_result(true), 0)).await;
    let prompt = "x".repeat(300 * 1024);
    let (outcome, _) = run(&fake, &prompt).await;
    assert_eq!(outcome.status, OutcomeStatus::Succeeded, "{outcome:?}");
    let requests = fake.requests();
    let secret = requests
        .iter()
        .position(|r| r.method == "POST" && r.path.ends_with("/secrets"))
        .unwrap();
    let job = requests
        .iter()
        .position(|r| r.method == "POST" && r.path.ends_with("/jobs"))
        .unwrap();
    assert!(secret < job);
    assert_eq!(
        requests[secret].body["stringData"]["prompt.txt"]
            .as_str()
            .unwrap()
            .len(),
        prompt.len()
    );
    let init = &requests[job].body["spec"]["template"]["spec"]["initContainers"][0];
    assert!(
        !init.to_string().contains("xxxxxxxx"),
        "the prompt is not in the Job"
    );
    // Owned by the Job, so it goes with it even if the process dies first.
    let patch = requests
        .iter()
        .find(|r| r.method == "PATCH" && r.path.ends_with("-prompt"))
        .unwrap();
    let owner = &patch.body["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "Job");
    assert_eq!(owner["name"], requests[job].body["metadata"]["name"]);
    assert!(owner["uid"].as_str().is_some_and(|u| !u.is_empty()));
    assert_eq!(count(&fake, "DELETE", "-prompt"), 1);
}

#[tokio::test]
async fn a_failed_cli_is_judged_like_the_local_one_with_the_pods_exit_code() {
    let fake = fake_with(script(claude_result(false), 1)).await;
    let (outcome, _) = run(&fake, "hi").await;
    assert_eq!(outcome.status, OutcomeStatus::Failed);
    assert_eq!(outcome.exit_code, Some(1));
    let error = outcome.error.unwrap();
    assert!(
        error.contains("the tool broke") && error.starts_with("claude_k8s exited with code 1"),
        "{error}"
    );
    assert_eq!(outcome.session_id.as_deref(), Some("s1"));
    assert_eq!(count(&fake, "DELETE", "/jobs/"), 1);
}

#[tokio::test]
async fn a_log_stream_that_never_holds_is_given_up_after_50_attempts() {
    let mut s = script(claude_result(true), 0);
    s.hold = true;
    let fake = fake_with(s).await;
    fake.faults(|f| {
        f.drop_log_after = Some(0);
        f.drop_every_follow = true;
    });
    let watcher = fake.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if watcher
                .requests()
                .iter()
                .filter(|r| r.query.contains("follow=true"))
                .count()
                >= 50
            {
                watcher.release();
                return;
            }
        }
    });
    let (outcome, log) = run(&fake, "hi").await;
    assert!(log.contains("max reconnect attempts (50) reached"), "{log}");
    let follows = fake
        .requests()
        .iter()
        .filter(|r| r.query.contains("follow=true"))
        .count();
    assert_eq!(follows, 50);
    // The whole log is read once the Job is over, so the run still has it.
    assert_eq!(
        outcome.status,
        OutcomeStatus::Succeeded,
        "{outcome:?}\n{log}"
    );
}

#[tokio::test]
async fn two_runs_of_one_agent_at_once_make_one_job() {
    let mut s = script(claude_result(true), 0);
    s.hold = true;
    let fake = fake_with(s).await;
    let adapter = adapter();
    let sink = Arc::new(Sink::default());
    let first = invocation(&fake, "run-1", "hi");
    let cancel = first.cancel.clone();
    let (a, b) = tokio::join!(adapter.invoke(first, sink.clone()), async {
        let second = adapter
            .invoke(invocation(&fake, "run-2", "hi"), sink.clone())
            .await;
        cancel.cancel();
        second
    });
    assert_eq!(
        b.error_code,
        Some(ErrorCode::K8sConcurrentRunBlocked),
        "{b:?}"
    );
    assert_eq!(a.status, OutcomeStatus::Cancelled, "{a:?}");
    assert_eq!(count(&fake, "POST", "/jobs"), 1);
    assert!(
        fake.job_names().is_empty(),
        "the cancelled run's Job is deleted"
    );
}

#[tokio::test]
async fn a_job_past_its_deadline_is_a_timeout() {
    let mut s = script(claude_result(true)[..1].to_vec(), 0);
    s.hold = true;
    let fake = fake_with(s).await;
    let sink = Arc::new(Sink::default());
    let mut inv = invocation(&fake, "run-1", "hi");
    inv.config["timeoutSec"] = json!(1);
    inv.config["graceSec"] = json!(30);
    let outcome = tokio::time::timeout(Duration::from_secs(20), adapter().invoke(inv, sink))
        .await
        .unwrap();
    assert_eq!(outcome.status, OutcomeStatus::TimedOut, "{outcome:?}");
    assert_eq!(outcome.error_code, Some(ErrorCode::Timeout));
    assert_eq!(outcome.exit_code, Some(137));
    let job = fake
        .requests()
        .into_iter()
        .find(|r| r.method == "POST" && r.path.ends_with("/jobs"))
        .unwrap();
    assert_eq!(job.body["spec"]["activeDeadlineSeconds"], 1);
    assert!(fake.job_names().is_empty());
}

#[tokio::test]
async fn a_job_removed_before_its_end_is_read_is_judged_by_its_output() {
    let fake = fake_with(script(claude_result(true), 0)).await;
    fake.faults(|f| f.vanish = true);
    let (outcome, log) = run(&fake, "hi").await;
    assert_eq!(
        outcome.status,
        OutcomeStatus::Succeeded,
        "{outcome:?}\n{log}"
    );
    assert_eq!(outcome.session_id.as_deref(), Some("s1"));
}

#[tokio::test]
async fn a_job_name_taken_is_a_create_failure_with_the_apis_reason() {
    let fake = fake_with(script(claude_result(true), 0)).await;
    let adapter = adapter();
    let sink = Arc::new(Sink::default());
    let mut first = invocation(&fake, "run-1", "hi");
    first.config["retainJobs"] = json!(true);
    let outcome = adapter.invoke(first.clone(), sink.clone()).await;
    assert_eq!(outcome.status, OutcomeStatus::Succeeded, "{outcome:?}");
    // The same run again (a retry) finds its retained, finished Job's name
    // taken: the guard ignores a finished Job, the API answers 409.
    let again = adapter.invoke(first, sink).await;
    assert_eq!(
        again.error_code,
        Some(ErrorCode::K8sJobCreateFailed),
        "{again:?}"
    );
    assert!(again.error.unwrap().contains("already exists"));
    assert_eq!(count(&fake, "POST", "/jobs"), 2);
}

/// A Job deleted (as by kubectl) while its pod is still starting: the run
/// does not wait out the pod deadline for a pod that will never come; it
/// fails as deleted outside Paperclip, and nothing else is deleted.
#[tokio::test]
async fn a_job_deleted_before_its_pod_runs_is_reported_deleted_outside_paperclip() {
    let fake = fake_with(script(claude_result(true), 0)).await;
    let outside = fake.clone();
    let deleter = tokio::spawn(async move {
        // The Job appears when the adapter creates it; a deadline, not a
        // fixed wait, bounds the look.
        let name = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                if let Some(name) = outside.job_names().pop() {
                    break name;
                }
                // Not a wait: the adapter's task runs between looks.
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the adapter created no Job within 30 s");
        let config = kube::Config::new(outside.url.parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let jobs: kube::Api<k8s_openapi::api::batch::v1::Job> =
            kube::Api::namespaced(client, fake::NAMESPACE);
        jobs.delete(&name, &kube::api::DeleteParams::background())
            .await
            .unwrap();
        name
    });
    let (outcome, log) = run(&fake, "hi").await;
    let name = deleter.await.unwrap();
    assert_eq!(outcome.status, OutcomeStatus::Failed, "{outcome:?}\n{log}");
    assert_eq!(
        outcome.error_code,
        Some(ErrorCode::K8sJobDeletedExternally),
        "{outcome:?}\n{log}"
    );
    let error = outcome.error.unwrap();
    assert!(
        error.contains(&format!("Job {name} was deleted outside Paperclip")),
        "{error}"
    );
    assert_eq!(
        count(&fake, "DELETE", "/jobs/"),
        1,
        "only the outside delete"
    );
}
