//! `claude_k8s` end to end: the real binary, pointed by `KUBECONFIG` at a
//! fake Kubernetes API server (`k8s/fake.rs`) that runs each Job's pod from
//! a script of Claude Code's stream-json output.

use crate::clis;
use crate::common;
use crate::fake;
use crate::setup;

use common::until;
use fake::{LocalKubelet, Recorded, Script, API_URL_IN_CLUSTER};
use paperclip_scripted_provider::ScriptedProvider;
use serde_json::{json, Value};
use setup::{pairs, setup, setup_kind, Setup};

const SESSION: &str = "sess-k8s-1";

pub(crate) fn claude_lines() -> Vec<String> {
    vec![
        json!({"type": "system", "subtype": "init", "session_id": SESSION, "model": "claude-sonnet-4-5", "tools": ["Bash"]}).to_string(),
        "plain progress from the pod".to_string(),
        json!({"type": "assistant", "message": {"id": "msg_1", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Working on it in a pod."}],
            "usage": {"input_tokens": 100, "output_tokens": 20}}}).to_string(),
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "Done in the pod.",
            "session_id": SESSION, "total_cost_usd": 0.0125, "num_turns": 1,
            "usage": {"input_tokens": 100, "output_tokens": 20}}).to_string(),
    ]
}

fn env_of(job: &Value) -> Vec<Value> {
    job["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap()
        .clone()
}

fn literal(env: &[Value], name: &str) -> Option<String> {
    env.iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str().map(String::from))
}

/// A task run as a Job: the spec the API server received (labels, security
/// context, env allow-list, shared volume, copied pod settings), transcript
/// events parsed from the followed log, a dropped log stream resumed with
/// its replay removed, usage and cost recorded, the Job deleted, and the
/// next run of the task resuming the CLI session from the shared volume.
#[tokio::test]
async fn a_claude_k8s_run_is_a_job_with_transcript_usage_and_cleanup() {
    let t = setup(
        Script {
            lines: claude_lines(),
            exit_code: 0,
            hold: false,
            after_release: vec![],
        },
        json!({"env": {"AGENT_SETTING": "from-config"}, "model": "claude-sonnet-4-5"}),
    )
    .await;
    // The first follow breaks in the middle of the third line.
    t.k8s.faults(|f| f.drop_log_after = Some(2));
    let issue = t.assign("Ship it from a pod").await;
    let runs = t.ended_runs(1).await;
    let run = &runs[0];
    let run_id = run["id"].as_str().unwrap();
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["exitCode"], 0, "{run}");

    // The concurrency guard looked for this agent's Jobs before creating one.
    let requests = t.k8s.requests();
    let guard = requests
        .iter()
        .position(|r| r.method == "GET" && r.path.ends_with("/jobs"))
        .unwrap();
    let create = requests
        .iter()
        .position(|r| r.method == "POST" && r.path.ends_with("/jobs"))
        .unwrap();
    assert!(guard < create);
    assert!(
        requests[guard]
            .query
            .contains("labelSelector=paperclip.io%2Fagent-id%3D"),
        "{}",
        requests[guard].query
    );

    let job = &requests[create].body;
    let name = job["metadata"]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("ac-") && name.len() <= 63, "{name}");
    let labels = &job["metadata"]["labels"];
    assert_eq!(labels["paperclip.io/agent-id"], t.aid.as_str());
    assert_eq!(labels["paperclip.io/run-id"], run_id);
    assert_eq!(labels["paperclip.io/company-id"], t.cid.as_str());
    assert_eq!(labels["paperclip.io/adapter-type"], "claude_k8s");
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsUser"], 1000);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["fsGroupChangePolicy"],
        "OnRootMismatch"
    );
    let main = &pod["containers"][0];
    assert_eq!(main["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(
        main["securityContext"]["capabilities"]["drop"],
        json!(["ALL"])
    );
    assert_eq!(main["image"], "ghcr.io/example/paperclip:1.0.0");
    assert_eq!(pod["imagePullSecrets"], json!([{"name": "regcred"}]));
    assert_eq!(pod["dnsConfig"]["nameservers"], json!(["10.0.0.10"]));
    assert_eq!(job["spec"]["ttlSecondsAfterFinished"], 300);
    assert!(pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["persistentVolumeClaim"]["claimName"] == "paperclip-data"));
    let command = main["command"][2].as_str().unwrap();
    assert!(
        command.starts_with(
            "cat /tmp/prompt/prompt.txt | claude '--print' '-' '--output-format' 'stream-json'"
        ),
        "{command}"
    );
    assert!(!command.contains("--resume"), "{command}");
    let prompt = pod["initContainers"][0]["env"][0]["value"]
        .as_str()
        .unwrap();
    assert!(
        prompt.contains(issue["identifier"].as_str().unwrap()),
        "{prompt}"
    );

    // The env allow-list: the run's variables and the config's env; of the
    // server, only allowed names; never its database URL or secrets.
    let env = env_of(job);
    assert_eq!(literal(&env, "PAPERCLIP_RUN_ID").as_deref(), Some(run_id));
    assert_eq!(
        literal(&env, "PAPERCLIP_TASK_ID").as_deref(),
        issue["id"].as_str()
    );
    // The run's key is in the run's own Secret, referenced, not in the Job.
    let key = env
        .iter()
        .find(|e| e["name"] == "PAPERCLIP_API_KEY")
        .unwrap();
    assert_eq!(
        key["valueFrom"]["secretKeyRef"]["name"],
        format!("{name}-env")
    );
    let env_secret = requests
        .iter()
        .find(|r| r.method == "POST" && r.path.ends_with("/secrets"))
        .unwrap();
    let api_key = env_secret.body["stringData"]["PAPERCLIP_API_KEY"]
        .as_str()
        .unwrap();
    assert!(!api_key.is_empty() && !job.to_string().contains(api_key));
    assert_eq!(
        literal(&env, "PAPERCLIP_API_URL").as_deref(),
        Some(API_URL_IN_CLUSTER)
    );
    assert_eq!(
        literal(&env, "AGENT_SETTING").as_deref(),
        Some("from-config")
    );
    assert_eq!(literal(&env, "HOME").as_deref(), Some("/paperclip"));
    let names: Vec<&str> = env.iter().map(|e| e["name"].as_str().unwrap()).collect();
    for forbidden in ["PAPERCLIP_SIGNING_SECRET", "SERVER_ONLY_SECRET", "POD_IP"] {
        assert!(
            !names.contains(&forbidden),
            "{forbidden} reached the Job: {names:?}"
        );
    }
    assert!(env.iter().any(|e| e["name"] == "ANTHROPIC_API_KEY"
        && e["valueFrom"]["secretKeyRef"]["name"] == "paperclip-secrets"));
    // The control plane's envFrom reaches the Job by reference (the same
    // Secret named, no value copied); the database URL, which such a
    // Secret might hold, is shadowed empty, since env beats envFrom.
    assert_eq!(
        main["envFrom"],
        json!([{"secretRef": {"name": "paperclip-bulk"}}])
    );
    assert_eq!(
        env.iter()
            .filter(|e| e["name"] == "DATABASE_URL")
            .collect::<Vec<_>>(),
        vec![&json!({"name": "DATABASE_URL", "value": ""})]
    );
    assert!(!job.to_string().contains("must-not-reach-a-job"));

    // The log was followed, dropped, and resumed from the last chunk; the
    // replayed lines and the half line appear once.
    let follows: Vec<Recorded> = t
        .calls("GET", "/log")
        .into_iter()
        .filter(|r| r.query.contains("follow=true"))
        .collect();
    assert!(follows.len() >= 2, "{follows:?}");
    assert!(
        follows[1].query.contains("sinceSeconds="),
        "{:?}",
        follows[1]
    );
    let log =
        t.s.ok_get(&format!(
            "/api/heartbeat-runs/{run_id}/log?limitBytes=4194304"
        ))
        .await;
    let log = log["content"].as_str().unwrap();
    assert!(log.contains("reconnecting (attempt 1/50)"), "{log}");
    assert_eq!(log.matches("msg_1").count(), 1, "{log}");
    assert_eq!(
        log.matches("plain progress from the pod").count(),
        1,
        "{log}"
    );
    let events =
        t.s.ok_get(&format!("/api/heartbeat-runs/{run_id}/events?limit=1000"))
            .await;
    let types: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["eventType"].as_str())
        .collect();
    assert!(types.contains(&"transcript.init"), "{types:?}");
    assert_eq!(
        types
            .iter()
            .filter(|t| **t == "transcript.assistant")
            .count(),
        1,
        "{types:?}"
    );

    let usage = &run["usageJson"];
    assert_eq!(usage["inputTokens"], 100, "{usage}");
    assert_eq!(usage["outputTokens"], 20, "{usage}");
    assert_eq!(usage["provider"], "anthropic");
    let costs =
        t.s.wait_for(&format!("/api/companies/{}/cost-events", t.cid), 20, |c| {
            c.as_array().is_some_and(|c| !c.is_empty())
        })
        .await;
    assert_eq!(costs[0]["heartbeatRunId"], run_id);
    // The Job inherits the control plane's ANTHROPIC_API_KEY by reference:
    // a metered run, billed.
    assert_eq!(usage["billingType"], "metered_api", "{usage}");
    assert_eq!(costs[0]["costCents"], 1);

    // Cleaned up: the Job deleted in the background, nothing left.
    assert_eq!(t.calls("DELETE", &format!("/secrets/{name}-env")).len(), 1);
    let deletes = t.calls("DELETE", &format!("/jobs/{name}"));
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0].body["propagationPolicy"], "Background");
    assert!(t.k8s.job_names().is_empty());

    // A comment wakes the agent on the same task: the next Job resumes the
    // CLI session (kept in HOME on the shared volume).
    t.s.ok_post(
        &format!("/api/issues/{}/comments", issue["id"].as_str().unwrap()),
        json!({"body": "One more thing"}),
    )
    .await;
    t.ended_runs(2).await;
    let creates = t.calls("POST", "/jobs");
    assert_eq!(creates.len(), 2);
    let command = creates[1].body["spec"]["template"]["spec"]["containers"][0]["command"][2]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        command.contains(&format!("'--resume' '{SESSION}'")),
        "{command}"
    );
}

/// Cancelling a run deletes its Job (background propagation) and the run
/// ends `cancelled`.
#[tokio::test]
async fn cancel_deletes_the_job() {
    let t = setup(
        Script {
            lines: claude_lines()[..1].to_vec(),
            exit_code: 0,
            hold: true,
            after_release: vec![],
        },
        json!({}),
    )
    .await;
    t.assign("A long one").await;
    until(30, "the Job's pod to run", async || {
        (t.k8s.running_pods() == 1).then_some(())
    })
    .await;
    let runs =
        t.s.ok_get(&format!(
            "/api/companies/{}/heartbeat-runs?agentId={}",
            t.cid, t.aid
        ))
        .await;
    let run_id = runs[0]["id"].as_str().unwrap().to_string();
    let run =
        t.s.ok_post(
            &format!("/api/heartbeat-runs/{run_id}/cancel"),
            json!({"reason": "not needed"}),
        )
        .await;
    assert_eq!(run["status"], "cancelled", "{run}");
    let deletes = t.calls("DELETE", "/jobs/");
    assert_eq!(deletes.len(), 1, "{deletes:?}");
    assert_eq!(deletes[0].body["propagationPolicy"], "Background");
    assert!(t.k8s.job_names().is_empty());
}

/// No Job starts unless the API said none of the agent's is running: a 500
/// on the guard's list, or no API at all, fails the run before any Job.
#[tokio::test]
async fn an_unreachable_api_fails_closed() {
    let t = setup(
        Script {
            lines: claude_lines(),
            exit_code: 0,
            hold: false,
            after_release: vec![],
        },
        json!({}),
    )
    .await;
    t.k8s.faults(|f| f.list_jobs = Some(500));
    t.assign("Guarded").await;
    let run = &t.ended_runs(1).await[0];
    assert_eq!(run["status"], "failed");
    assert_eq!(
        run["errorCode"], "k8s_concurrency_guard_unreachable",
        "{run}"
    );
    assert!(
        run["error"]
            .as_str()
            .unwrap()
            .contains("no Job was started"),
        "{run}"
    );

    // An agent whose kubeconfig names a server that is not there.
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = dead.local_addr().unwrap().port();
    drop(dead);
    let path = t.s.data_dir.join("dead-kubeconfig.yaml");
    std::fs::write(&path, format!("apiVersion: v1\nkind: Config\nclusters:\n- name: x\n  cluster:\n    server: http://127.0.0.1:{port}\nusers:\n- name: x\n  user: {{}}\ncontexts:\n- name: x\n  context:\n    cluster: x\n    user: x\ncurrent-context: x\n")).unwrap();
    let other = t.s.ok_post(
        &format!("/api/companies/{}/agents", t.cid),
        json!({"name": "Elsewhere", "adapterType": "claude_k8s", "adapterConfig": {"kubeconfig": path.to_str().unwrap()}}),
    ).await;
    t.s.issue(
        &t.cid,
        json!({"title": "Nowhere", "status": "todo", "assigneeAgentId": other["id"]}),
    )
    .await;
    let runs =
        t.s.wait_for(
            &format!(
                "/api/companies/{}/heartbeat-runs?agentId={}",
                t.cid,
                other["id"].as_str().unwrap()
            ),
            30,
            |r| {
                r.as_array()
                    .is_some_and(|r| r.len() == 1 && r[0]["status"] == "failed")
            },
        )
        .await;
    assert!(
        runs[0]["errorCode"].as_str().unwrap().starts_with("k8s_"),
        "{}",
        runs[0]
    );
    assert!(t.calls("POST", "/jobs").is_empty());
}

/// A pod whose image cannot be pulled ends the run with the cause and what
/// to do, and its Job is removed.
#[tokio::test]
async fn an_image_pull_failure_is_a_clear_run_error() {
    let t = setup(
        Script {
            lines: claude_lines(),
            exit_code: 0,
            hold: false,
            after_release: vec![],
        },
        json!({}),
    )
    .await;
    t.k8s.faults(|f| f.image_pull = true);
    t.assign("Bad image").await;
    let run = &t.ended_runs(1).await[0];
    assert_eq!(run["status"], "failed");
    assert_eq!(run["errorCode"], "k8s_pod_schedule_failed", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(
        error.contains("ImagePullBackOff") && error.contains("adapterConfig.image"),
        "{error}"
    );
    assert!(t.k8s.job_names().is_empty());
}

/// The hire form's environment test asks the API what this account may do
/// (one SelfSubjectAccessReview per verb the adapter uses) and checks the
/// shared volume.
#[tokio::test]
async fn the_environment_test_checks_rbac_and_the_shared_volume() {
    let t = setup(Script::default(), json!({})).await;
    t.k8s.faults(|f| {
        f.denied.insert(("get".into(), "pods/log".into()));
    });
    let report =
        t.s.ok_post(
            &format!(
                "/api/companies/{}/adapters/claude_k8s/test-environment",
                t.cid
            ),
            json!({"adapterConfig": {}}),
        )
        .await;
    let check = |code: &str| {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["code"] == code)
            .cloned()
    };
    assert_eq!(report["status"], "fail", "{report}");
    assert_eq!(
        check("k8s_rbac_pod_log").unwrap()["level"],
        "error",
        "{report}"
    );
    assert_eq!(check("k8s_rbac_job_create").unwrap()["level"], "info");
    assert_eq!(check("k8s_pvc_rwx").unwrap()["level"], "info", "{report}");
    assert!(check("k8s_api_reachable").is_some());
    let reviews = t.calls("POST", "selfsubjectaccessreviews");
    assert_eq!(reviews.len(), 12);
}

/// A control plane that dies while a Job runs: on restart its run is
/// settled as lost (`control_plane_restart`) and the task's continuation
/// reattaches to the still-running Job, reads its whole log and finishes
/// with its result; no second Job is created.
#[tokio::test]
async fn a_restarted_control_plane_reattaches_to_the_running_job() {
    let lines = claude_lines();
    let t = setup(
        Script {
            lines: lines[..2].to_vec(),
            exit_code: 0,
            hold: true,
            after_release: lines[2..].to_vec(),
        },
        json!({}),
    )
    .await;
    t.assign("Survive a restart").await;
    until(30, "the Job's pod to run", async || {
        (t.k8s.running_pods() == 1).then_some(())
    })
    .await;
    let followed = t.calls("GET", "/log").len();
    let Setup {
        s,
        env,
        k8s,
        cid,
        aid,
    } = t;
    let s = common::restart_keeping_data_env(s, &pairs(&env)).await;
    let t = Setup {
        s,
        env,
        k8s,
        cid,
        aid,
    };
    until(30, "the continuation to follow the Job", async || {
        (t.calls("GET", "/log").len() > followed).then_some(())
    })
    .await;
    t.k8s.release();
    let runs = t.ended_runs(2).await;
    assert_eq!(runs[0]["errorCode"], "control_plane_restart", "{}", runs[0]);
    assert_eq!(runs[1]["status"], "succeeded", "{}", runs[1]);
    assert_eq!(
        t.calls("POST", "/jobs").len(),
        1,
        "a second Job was created"
    );
    let run_id = runs[1]["id"].as_str().unwrap();
    let log =
        t.s.ok_get(&format!(
            "/api/heartbeat-runs/{run_id}/log?limitBytes=4194304"
        ))
        .await;
    let log = log["content"].as_str().unwrap();
    assert!(log.contains("Reattaching to orphaned Job"), "{log}");
    assert_eq!(log.matches("msg_1").count(), 1, "{log}");
    assert_eq!(runs[1]["usageJson"]["outputTokens"], 20, "{}", runs[1]);
    assert!(t.k8s.job_names().is_empty());
}

/// The pod's container is the real CLI (run by the fake as a local process
/// with the Job's command line and env) against the scripted provider: the
/// Job checks out the task, comments and marks it done through our API with
/// the run's key, and its usage is recorded. Skipped when the CLI is not
/// installed (required in CI).
async fn a_job_running_the_real_cli_works_the_task_through_the_api(
    local: &'static str,
    kind: &str,
) {
    let Some(cli) = clis::Cli::find(local) else {
        return;
    };
    let provider = ScriptedProvider::start(setup::work_the_task("Implemented in a Job.")).await;
    let t = setup_kind(kind, Script::default(), cli.config(&provider)).await;
    t.k8s.set_api_url(&t.s.base);
    t.k8s.run_locally(LocalKubelet {
        home: cli.home.clone(),
        workdir: cli.home.join("work"),
    });
    let issue = t.assign("Add the health endpoint").await;
    let iid = issue["id"].as_str().unwrap();
    let runs = t.ended_runs(1).await;
    let run_id = runs[0]["id"].as_str().unwrap();
    let log =
        t.s.ok_get(&format!(
            "/api/heartbeat-runs/{run_id}/log?limitBytes=4194304"
        ))
        .await;
    assert_eq!(
        runs[0]["status"], "succeeded",
        "{}\n{}",
        runs[0], log["content"]
    );
    let issue = t.s.ok_get(&format!("/api/issues/{iid}")).await;
    assert_eq!(issue["status"], "done", "{issue}");
    let comments = t.s.ok_get(&format!("/api/issues/{iid}/comments")).await;
    assert!(
        comments
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["body"] == "Implemented in a Job." && c["authorAgentId"] == t.aid.as_str()),
        "{comments}"
    );
    assert!(
        runs[0]["usageJson"]["outputTokens"].as_u64().unwrap() > 0,
        "{}",
        runs[0]
    );
    assert!(t.k8s.job_names().is_empty());
}

#[tokio::test]
async fn a_claude_k8s_job_running_the_real_cli_works_the_task() {
    a_job_running_the_real_cli_works_the_task_through_the_api("claude_local", "claude_k8s").await;
}

#[tokio::test]
async fn an_opencode_k8s_job_running_the_real_cli_works_the_task() {
    a_job_running_the_real_cli_works_the_task_through_the_api("opencode_local", "opencode_k8s")
        .await;
}
