//! Spending nothing for nothing: idle timer wakes are recorded as skipped
//! and spawn nothing, an agent never wakes itself, agents waking each other
//! on one task are stopped and shown to the board, and a provider's usage
//! limit defers the agent's work to its reset time instead of failing it in
//! a loop. Runs on SQLite, and on Postgres with PAPERCLIP_TEST_PG_URL.

use crate::common;

use common::{until, TestServer};
use serde_json::{json, Value};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

async fn wakes(server: &TestServer, agent: &str, query: &str) -> Vec<Value> {
    server
        .ok_get(&format!("/api/agents/{agent}/wakeup-requests{query}"))
        .await
        .as_array()
        .unwrap()
        .clone()
}

async fn timer(server: &TestServer, agent: &str, extra: Value) {
    let mut heartbeat = json!({ "enabled": true, "intervalSec": 30 });
    for (k, v) in extra.as_object().unwrap() {
        heartbeat[k] = v.clone();
    }
    server
        .ok_patch(
            &format!("/api/agents/{agent}"),
            json!({ "runtimeConfig": { "heartbeat": heartbeat } }),
        )
        .await;
}

#[tokio::test]
async fn idle_timers_spawn_nothing_while_agents_with_work_still_wake() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Thrift Co").await);
    let idle = id(&server
        .script_agent(&cid, "Idle", "echo tick\n", json!({}))
        .await);
    let busy = id(&server
        .script_agent(&cid, "Busy", "echo tick\n", json!({}))
        .await);
    let planner = id(&server
        .script_agent(&cid, "Planner", "echo plan\n", json!({}))
        .await);
    // Busy has a task it has not finished (its script does not touch it), so
    // each of its timer wakes has something to act on.
    server
        .issue(
            &cid,
            json!({ "title": "Keep working", "status": "todo", "assigneeAgentId": busy }),
        )
        .await;
    timer(&server, &idle, json!({})).await;
    timer(&server, &busy, json!({})).await;
    timer(&server, &planner, json!({ "wakeWhenIdle": true })).await;

    // Three timer slots come and go for the idle agent: each is one skipped
    // wake, recorded with its reason, and none spawns anything.
    let skipped = until(110, "three skipped timer wakes", async || {
        let list = wakes(&server, &idle, "?status=skipped").await;
        (list.len() >= 3).then_some(list)
    })
    .await;
    for w in &skipped {
        assert_eq!(w["source"], "timer", "{w}");
        assert_eq!(w["skipReason"], "no_work", "{w}");
        assert!(w["runId"].is_null() && w["runStatus"].is_null(), "{w}");
    }
    assert!(
        server.runs_of(&cid, &idle).await.is_empty(),
        "an idle agent's timer spawns nothing"
    );
    assert!(
        wakes(&server, &idle, "")
            .await
            .iter()
            .all(|w| w["status"] == "skipped"),
        "every wake of the idle agent was skipped"
    );
    // The activity row says the same, for the board's feed: once when the
    // agent went idle, not once per interval.
    let activity = server
        .ok_get(&format!(
            "/api/companies/{cid}/activity?entityType=agent&entityId={idle}&limit=100"
        ))
        .await;
    let skips: Vec<&Value> = activity
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["action"] == "heartbeat.skipped")
        .collect();
    assert_eq!(skips.len(), 1, "{activity}");
    assert!(skips
        .iter()
        .all(|a| a["details"]["source"] == "timer" && a["details"]["skipReason"] == "no_work"));

    // Work is never starved: the busy agent's timer runs it, and the
    // planner that asked for it runs with nothing to do.
    for (agent, what) in [(&busy, "busy agent"), (&planner, "planner")] {
        let runs = until(60, what, async || {
            let runs = server.runs_of(&cid, agent).await;
            runs.iter()
                .any(|r| r["invocationSource"] == "timer" && r["status"] == "succeeded")
                .then_some(runs)
        })
        .await;
        assert!(!runs.is_empty());
    }
    let busy_wakes = wakes(&server, &busy, "").await;
    assert!(busy_wakes.iter().any(|w| w["source"] == "timer"
        && w["runStatus"] == "succeeded"
        && w["skipReason"].is_null()));
    // Bad filters are refused with the field named.
    let (status, body) = server
        .get(&format!(
            "/api/agents/{idle}/wakeup-requests?status=sleeping"
        ))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("status"), "{body}");
    let (status, _) = server
        .get(&format!("/api/agents/{idle}/wakeup-requests?limit=99999"))
        .await;
    assert_eq!(status, 400);
    // The board sees the saving.
    let dash = server
        .ok_get(&format!("/api/companies/{cid}/dashboard"))
        .await;
    assert!(
        dash["thrift"]["wakesSkipped24h"]["no_work"]
            .as_i64()
            .unwrap()
            >= 3,
        "{dash}"
    );
    let prefix = server.ok_get(&format!("/api/companies/{cid}")).await["issuePrefix"]
        .as_str()
        .unwrap()
        .to_string();
    let page = server.page(&format!("/{prefix}/agents/{idle}")).await;
    assert!(page.contains("data-skip-reason=\"no_work\""), "{page}");
}

#[tokio::test]
async fn an_agent_never_wakes_itself() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Self Co").await);
    // In each run the agent mentions itself on its task, files a follow-up
    // task for itself and moves its task along: none of it may wake it.
    let script = r#"api() { curl -s -o /dev/null -X "$1" "$PAPERCLIP_API_URL$2" \
  -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" \
  -H 'Content-Type: application/json' -d "$3"; }
api POST "/api/issues/$PAPERCLIP_TASK_ID/comments" '{"body":"@Solo note to self"}'
api POST "/api/companies/$PAPERCLIP_COMPANY_ID/issues" "{\"title\":\"Follow-up\",\"status\":\"todo\",\"assigneeAgentId\":\"$PAPERCLIP_AGENT_ID\"}"
api POST "/api/issues/$PAPERCLIP_TASK_ID/checkout" "{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\",\"in_progress\"]}"
"#;
    let agent = id(&server.script_agent(&cid, "Solo", script, json!({})).await);
    let issue = server
        .issue(
            &cid,
            json!({ "title": "Note to self", "status": "todo", "assigneeAgentId": agent }),
        )
        .await;
    let iid = id(&issue);
    let settled = |n: usize| {
        let server = &server;
        let (cid, agent) = (cid.clone(), agent.clone());
        async move {
            until(30, "runs settled", async || {
                let runs = server.runs_of(&cid, &agent).await;
                let done = runs.iter().filter(|r| r["status"] == "succeeded").count();
                let live = runs
                    .iter()
                    .any(|r| r["status"] == "queued" || r["status"] == "running");
                (done >= n && !live).then_some(runs)
            })
            .await
        }
    };
    let runs = settled(1).await;
    // Its own comment, task and checkout left nothing queued behind the run.
    assert_eq!(runs.len(), 1, "{runs:?}");
    let comments = server.ok_get(&format!("/api/issues/{iid}/comments")).await;
    assert!(
        comments.to_string().contains("note to self"),
        "the script ran: {comments}"
    );
    // A board comment is what wakes it next; that run's own actions again
    // wake nothing.
    server
        .ok_post(
            &format!("/api/issues/{iid}/comments"),
            json!({ "body": "board here" }),
        )
        .await;
    let runs = settled(2).await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[1]["wakeReason"], "issue_commented", "{runs:?}");
}

/// Two agents whose scripts answer a mention by mentioning the other.
fn ping_pong(other: &str) -> String {
    format!(
        r#"curl -sSf -X POST "$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID/comments" \
  -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" \
  -H 'Content-Type: application/json' -d '{{"body":"@{other} your turn"}}' >/dev/null
"#
    )
}

#[tokio::test]
async fn agents_mentioning_each_other_are_held_and_the_board_is_told() {
    let server = TestServer::start().await;
    let company = server.company("Loop Co").await;
    let (cid, prefix) = (
        id(&company),
        company["issuePrefix"].as_str().unwrap().to_string(),
    );
    let ping = id(&server
        .script_agent(&cid, "Ping", &ping_pong("Pong"), json!({}))
        .await);
    let pong = id(&server
        .script_agent(&cid, "Pong", &ping_pong("Ping"), json!({}))
        .await);
    let issue = server
        .issue(
            &cid,
            json!({ "title": "Talk it over", "status": "todo", "assigneeAgentId": ping }),
        )
        .await;
    let iid = id(&issue);
    let ident = issue["identifier"].as_str().unwrap().to_string();
    let diag = format!("/api/issues/{iid}/diagnostics/wakes");
    let held = server
        .wait_for(&diag, 90, |d| !d["wakeLoop"]["heldAt"].is_null())
        .await;
    let limit = held["wakeLoop"]["limit"].as_i64().unwrap();
    assert_eq!(
        held["wakeLoop"]["wakes"].as_i64().unwrap(),
        limit + 1,
        "{held}"
    );
    // Once the runs in flight end, nothing more starts: the loop is over.
    let total = until(30, "no live runs", async || {
        let live = server
            .ok_get(&format!("/api/companies/{cid}/live-runs"))
            .await;
        if !live.as_array().unwrap().is_empty() {
            return None;
        }
        let runs =
            server.runs_of(&cid, &ping).await.len() + server.runs_of(&cid, &pong).await.len();
        Some(runs)
    })
    .await;
    // The assignment run plus one run per delivered agent-caused wake.
    assert!(
        total as i64 <= limit + 1,
        "{total} runs for a limit of {limit}"
    );
    let mut held_count = 0;
    for agent in [&ping, &pong] {
        held_count += wakes(&server, agent, "?status=skipped")
            .await
            .iter()
            .filter(|w| w["skipReason"] == "loop_held" && w["issueIdentifier"] == ident.as_str())
            .count();
    }
    assert!(held_count >= 1, "the wake that tripped the breaker is held");
    // The board sees it: in the activity feed, the inbox and on the task.
    assert!(server
        .actions(&cid)
        .await
        .iter()
        .any(|a| a == "issue.wake_loop_held"));
    let inbox = server.page(&format!("/{prefix}/inbox")).await;
    assert!(
        inbox.contains(&format!("data-held-issue=\"{ident}\"")),
        "{inbox}"
    );
    let task = server.page(&format!("/{prefix}/tasks/{ident}")).await;
    assert!(task.contains("data-wake-loop-held"), "{task}");
    // An agent cannot lift the hold; the board can, once.
    let key = server.key(&ping).await;
    let release = format!("/api/issues/{iid}/wake-loop/release");
    let (status, _) = server
        .as_agent(&key, None, "POST", &release, Some(json!({})))
        .await;
    assert_eq!(status, 403);
    let released = server.ok_post(&release, json!({})).await;
    assert!(
        !released["runIds"].as_array().unwrap().is_empty(),
        "{released}"
    );
    assert!(server
        .actions(&cid)
        .await
        .iter()
        .any(|a| a == "issue.wake_loop_released"));
    // A task that is not held has nothing to release.
    let calm = id(&server.issue(&cid, json!({ "title": "Calm" })).await);
    let (status, body) = server
        .post(&format!("/api/issues/{calm}/wake-loop/release"), json!({}))
        .await;
    assert_eq!(status, 409, "{body}");
    // A status change is progress: the count starts over.
    server
        .ok_patch(
            &format!("/api/issues/{iid}"),
            json!({ "status": "cancelled" }),
        )
        .await;
    let after = server.ok_get(&diag).await;
    assert!(
        after["wakeLoop"].is_null() || after["wakeLoop"]["heldAt"].is_null(),
        "{after}"
    );
}

#[tokio::test]
async fn a_usage_limited_run_defers_the_agents_work_to_the_reset_time() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Limit Co").await);
    // The first run is refused for a usage limit that lifts in 8 seconds;
    // later runs succeed.
    let script = r#"if [ ! -f limited.once ]; then
  touch limited.once
  echo "Claude AI usage limit reached|$(( $(date +%s) + 8 ))" >&2
  exit 1
fi
echo done
"#;
    let agent = id(&server
        .script_agent(&cid, "Limited", script, json!({}))
        .await);
    let issue = server
        .issue(
            &cid,
            json!({ "title": "Needs the model", "status": "todo", "assigneeAgentId": agent }),
        )
        .await;
    let iid = id(&issue);
    let first = until(30, "the limited run", async || {
        let runs = server.runs_of(&cid, &agent).await;
        runs.first().filter(|r| r["status"] == "failed").cloned()
    })
    .await;
    assert_eq!(first["errorCode"], "rate_limited", "{first}");
    let limited = server.ok_get(&format!("/api/agents/{agent}")).await;
    let until_at = limited["usageLimitedUntil"]
        .as_str()
        .expect("limit recorded")
        .to_string();
    assert_eq!(
        limited["status"], "idle",
        "a usage limit is not the agent's error"
    );
    // The work is kept: a run waits for the reset, holding the task.
    let task = server.ok_get(&format!("/api/issues/{iid}")).await;
    assert_ne!(task["status"], "blocked", "{task}");
    // A wake meanwhile joins the waiting run instead of failing again.
    server
        .ok_post(
            &format!("/api/issues/{iid}/comments"),
            json!({ "body": "any news?" }),
        )
        .await;
    let runs = server.runs_of(&cid, &agent).await;
    assert!(
        runs.iter().skip(1).all(|r| r["status"] == "queued"),
        "nothing runs before the limit lifts: {runs:?}"
    );
    let prefix = server.ok_get(&format!("/api/companies/{cid}")).await["issuePrefix"]
        .as_str()
        .unwrap()
        .to_string();
    let page = server.page(&format!("/{prefix}/agents/{agent}")).await;
    assert!(page.contains("usage limit until"), "{page}");
    let second = until(40, "the deferred run", async || {
        let runs = server.runs_of(&cid, &agent).await;
        runs.get(1).filter(|r| r["status"] == "succeeded").cloned()
    })
    .await;
    let started = second["startedAt"].as_str().unwrap();
    assert!(
        started >= until_at.as_str(),
        "the deferred run started at {started}, before the limit lifted at {until_at}"
    );
    assert_eq!(
        server.runs_of(&cid, &agent).await.len(),
        2,
        "the comment joined the deferred run"
    );
}
