//! `claude_k8s` runs that end in the cluster's hands, against the fake API
//! server: a pod killed at its memory limit and a Job deleted from under
//! its run are reported with their cause and what to do, and a Job names
//! its agent for whoever reads it in the cluster.

use crate::common;
use crate::fake;
use crate::setup;

use common::until;
use fake::{Script, NAMESPACE};
use serde_json::json;
use setup::setup;

fn started_lines() -> Vec<String> {
    vec![
        json!({"type": "system", "subtype": "init", "session_id": "sess-oom", "model": "claude-sonnet-4-5", "tools": ["Bash"]}).to_string(),
        json!({"type": "assistant", "message": {"id": "msg_1", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Building everything at once."}],
            "usage": {"input_tokens": 100, "output_tokens": 20}}})
        .to_string(),
    ]
}

/// The kernel kills the CLI's container at its limit (`OOMKilled`, 137):
/// the run says out of memory, the limit, and the key that raises it; the
/// Job and its pod carry the agent's name as an annotation.
#[tokio::test]
async fn an_oom_killed_pod_fails_the_run_naming_the_memory_limit() {
    let t = setup(
        Script {
            lines: started_lines(),
            ..Script::default()
        },
        // The flat dotted key, as the hire form stores it.
        json!({"resources.limits.memory": "3Gi"}),
    )
    .await;
    t.k8s.faults(|f| f.oom_kill = true);
    t.assign("Build the monorepo").await;
    let run = &t.ended_runs(1).await[0];
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["errorCode"], "k8s_oom_killed", "{run}");
    assert_eq!(run["exitCode"], 137, "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(
        error.starts_with("Out of memory")
            && error.contains("memory limit of 3Gi")
            && error.contains("Raise resources.limits.memory"),
        "{error}"
    );
    assert!(!error.contains("exited with code"), "{error}");

    let creates = t.calls("POST", "/jobs");
    assert_eq!(creates.len(), 1);
    let job = &creates[0].body;
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"],
        "3Gi"
    );
    for meta in [&job["metadata"], &job["spec"]["template"]["metadata"]] {
        assert_eq!(meta["annotations"]["paperclip.io/agent-name"], "Pod Coder");
        assert_eq!(
            meta["annotations"]["paperclip.io/adapter-type"],
            "claude_k8s"
        );
    }
    // A failed Job is removed like any other that ended.
    assert!(t.k8s.job_names().is_empty());
}

/// Someone deletes the Job while its CLI works (kubectl delete, a cleanup
/// policy): the run fails as deleted outside Paperclip, says what to do,
/// keeps the usage the CLI reported, and Paperclip deletes nothing more.
#[tokio::test]
async fn a_job_deleted_outside_paperclip_is_reported_as_such() {
    let t = setup(
        Script {
            lines: started_lines(),
            hold: true,
            ..Script::default()
        },
        json!({}),
    )
    .await;
    t.assign("A long refactor").await;
    // Deleted mid-run: once the adapter follows the running pod's log.
    until(30, "the run to follow its pod", async || {
        (t.k8s.running_pods() == 1 && !t.calls("GET", "/log").is_empty()).then_some(())
    })
    .await;
    let name = t.k8s.job_names().pop().unwrap();
    let url = format!(
        "{}/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{name}",
        t.k8s.url
    );
    let deleted = reqwest::Client::new()
        .delete(&url)
        .json(&json!({"propagationPolicy": "Background"}))
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());

    let run = &t.ended_runs(1).await[0];
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["errorCode"], "k8s_job_deleted_externally", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(
        error.contains(&format!("Job {name} was deleted outside Paperclip"))
            && error.contains("audit log"),
        "{error}"
    );
    assert!(!error.contains("signal"), "{error}");
    assert_eq!(run["usageJson"]["outputTokens"], 20, "{run}");
    assert_eq!(
        t.calls("DELETE", &format!("/jobs/{name}")).len(),
        1,
        "only the outside delete"
    );
}
