//! Context and quota with the real `claude` against the scripted provider:
//! a turn that reports a large context shows on the task's context row,
//! Compact now queues a run that resumes the same session and runs Claude
//! Code's own `/compact` (a divider in the thread, a smaller context), and
//! the provider's rate-limit headers become the agent's quota snapshot and
//! the original's `costs/quota-windows`. Skipped without `claude` (CI has it).

use crate::clis::Cli;
use crate::common::{until, TestServer};

use paperclip_scripted_provider::{RateLimits, RateWindow, ScriptedProvider, Turn, TurnUsage};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn ctx41_claude() {
    let Some(cli) = Cli::find("claude_local") else {
        return;
    };
    let provider = ScriptedProvider::start([Turn::Answer {
        text: "Read the code; more next time.".into(),
    }])
    .await;
    // 1,000 fresh + 123,000 cached input tokens: 124k of a 200k window.
    provider.report_usage(TurnUsage {
        input_tokens: 124_000,
        cached_input_tokens: 123_000,
        output_tokens: 50,
    });
    let now = chrono::Utc::now().timestamp();
    provider.report_rate_limits(Some(RateLimits {
        five_hour: Some(RateWindow {
            utilization: 0.78,
            resets_at: now + 3600,
        }),
        seven_day: Some(RateWindow {
            utilization: 0.41,
            resets_at: now + 3 * 86400,
        }),
    }));
    let s = TestServer::start().await;
    let company = s.company("Acme").await;
    let cid = company["id"].as_str().unwrap();
    let prefix = company["issuePrefix"].as_str().unwrap();
    let mut config = cli.config(&provider);
    // Claude Code reports the unified windows (`rate_limit_event`) on a
    // subscription token, not an API key.
    let env = config["env"].as_object_mut().unwrap();
    env.remove("ANTHROPIC_API_KEY");
    env.insert(
        "CLAUDE_CODE_OAUTH_TOKEN".into(),
        json!("sk-ant-oat01-scripted"),
    );
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Coder", "role": "engineer", "adapterType": "claude_local", "adapterConfig": config }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();
    let issue = s
        .issue(
            cid,
            json!({ "title": "Refactor the parser", "assigneeAgentId": aid, "status": "backlog" }),
        )
        .await;
    let iid = issue["id"].as_str().unwrap();
    let ident = issue["identifier"].as_str().unwrap();
    let compact = format!("/api/issues/{iid}/context/compact");

    // No session yet: nothing to compact. An agent's key is not the board.
    let (status, body) = s.post(&compact, json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let key = s.key(aid).await;
    let (status, _) = s
        .as_agent(&key, None, "POST", &compact, Some(json!({})))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // A process agent has no compaction to ask for.
    let other = s.agent(cid, "Scripter", None).await;
    let plain = s
        .issue(
            cid,
            json!({ "title": "Plain", "assigneeAgentId": other["id"], "status": "backlog" }),
        )
        .await;
    let (status, body) = s
        .post(
            &format!(
                "/api/issues/{}/context/compact",
                plain["id"].as_str().unwrap()
            ),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");

    // A run: the context row shows what the last request held.
    s.ok_patch(&format!("/api/issues/{iid}"), json!({ "status": "todo" }))
        .await;
    let first = s.settled_runs(cid, aid, 1, 120).await.remove(0);
    assert_eq!(first["status"], "succeeded", "{first}");
    let session = first["sessionIdAfter"]
        .as_str()
        .expect("a session")
        .to_string();
    // Who pays: a subscription token and no API key is Claude's
    // subscription, on the run and split out on the costs rollups.
    let usage = &first["usageJson"];
    assert_eq!(usage["billingType"], "subscription_included", "{first}");
    let by_agent = until(20, "the run's cost by agent", async || {
        let rows = s
            .ok_get(&format!("/api/companies/{cid}/costs/by-agent"))
            .await;
        rows.as_array()?
            .iter()
            .find(|r| r["agentId"] == aid && r["subscriptionRunCount"] == 1)
            .cloned()
    })
    .await;
    assert_eq!(by_agent["apiRunCount"], 0, "{by_agent}");
    // Its tokens are in the plan: priced by the CLI, billed nothing, as the
    // original's ledger records it, so no budget is spent or stops it.
    assert!(
        usage["costUsd"].as_f64().is_some_and(|usd| usd >= 0.005),
        "the CLI priced the run: {usage}"
    );
    assert_eq!(by_agent["costCents"], 0, "{by_agent}");
    assert!(usage["cachedInputTokens"].as_u64().unwrap() > 0, "{usage}");
    for (split, total) in [
        ("subscriptionInputTokens", "inputTokens"),
        ("subscriptionCachedInputTokens", "cachedInputTokens"),
        ("subscriptionOutputTokens", "outputTokens"),
    ] {
        assert_eq!(by_agent[split], usage[total], "{split}: {by_agent} {usage}");
        assert_eq!(by_agent[split], by_agent[total], "{split}: {by_agent}");
    }
    let by_provider = s
        .ok_get(&format!("/api/companies/{cid}/costs/by-provider"))
        .await;
    let anthropic = &by_provider[0];
    assert_eq!(
        anthropic["billingType"], "subscription_included",
        "{by_provider}"
    );
    assert_eq!(anthropic["subscriptionRunCount"], 1, "{by_provider}");
    let ctx = s.ok_get(&format!("/api/issues/{ident}/context")).await["context"].clone();
    assert_eq!(ctx["contextTokens"], 124_000, "{ctx}");
    assert_eq!(ctx["windowTokens"], 200_000, "{ctx}");
    assert_eq!(ctx["percent"], 62, "{ctx}");
    assert_eq!(ctx["canCompact"], true);
    let page = s.page(&format!("/{prefix}/tasks/{ident}")).await;
    assert!(
        page.contains("62 % · 124k of 200k tokens"),
        "the context row"
    );
    assert!(
        page.contains(&format!("/api/issues/{iid}/context/compact")),
        "Compact now"
    );

    // The windows Claude Code reported: the agent's snapshot, the route.
    let quota = s
        .ok_get(&format!("/api/companies/{cid}/costs/quota-windows"))
        .await;
    let anthropic = &quota.as_array().unwrap()[0];
    assert_eq!(anthropic["provider"], "anthropic", "{quota}");
    assert_eq!(anthropic["ok"], true);
    let windows = anthropic["windows"].as_array().unwrap();
    let five = windows
        .iter()
        .find(|w| w["label"] == "5h")
        .expect("5h window");
    assert_eq!(five["usedPercent"], 78.0);
    assert!(
        five["resetsAt"].as_str().is_some_and(|r| r.ends_with('Z')),
        "{five}"
    );
    assert!(windows
        .iter()
        .any(|w| w["label"] == "7d" && w["usedPercent"] == 41.0));
    let (status, _) = s
        .as_agent(
            &key,
            None,
            "GET",
            &format!("/api/companies/{cid}/costs/quota-windows"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = s
        .get(&format!(
            "/api/companies/{}/costs/quota-windows",
            uuid::Uuid::new_v4()
        ))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(s
        .page(&format!("/{prefix}/agents"))
        .await
        .contains("5h 78 % · resets"));
    let agent_page = s
        .page(&format!(
            "/{prefix}/agents/{}",
            agent["urlKey"].as_str().unwrap()
        ))
        .await;
    assert!(agent_page.contains("Provider usage windows"));

    // Compact now: one queued run (a second ask while it waits is refused)
    // that resumes the session and sends `/compact`.
    provider.push([Turn::Answer {
        text: "Summary: the parser was read.".into(),
    }]);
    let asked = s.ok_post(&compact, json!({})).await;
    let run_id = asked["runId"].as_str().expect("a queued run").to_string();
    let (status, body) = s.post(&compact, json!({})).await;
    assert!(
        status == StatusCode::CONFLICT || status == StatusCode::ACCEPTED,
        "{status} {body}"
    );
    let runs = s.settled_runs(cid, aid, 2, 120).await;
    let run = runs
        .iter()
        .find(|r| r["id"] == run_id.as_str())
        .expect("the compaction run");
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["wakeReason"], "context_compaction");
    assert_eq!(
        run["sessionIdBefore"],
        session.as_str(),
        "resumed the same session"
    );
    let events = s
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/events?limit=1000"))
        .await;
    let compacted = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["eventType"] == "transcript.compacted")
        .unwrap_or_else(|| panic!("no compaction in {events}"));
    let post = compacted["payload"]["postTokens"]
        .as_u64()
        .expect("post tokens");
    assert!(
        compacted["payload"]["preTokens"].as_u64().unwrap() >= 124_000,
        "{compacted}"
    );
    let ctx = until(10, "the smaller context", async || {
        let c = s.ok_get(&format!("/api/issues/{ident}/context")).await["context"].clone();
        (c["contextTokens"].as_u64() == Some(post)).then_some(c)
    })
    .await;
    assert!(ctx["contextTokens"].as_u64().unwrap() < 124_000, "{ctx}");
    let page = s.page(&format!("/{prefix}/tasks/{ident}")).await;
    assert!(page.contains("Context compacted · 124k →"), "the divider");
    let actions = s.actions(cid).await;
    assert_eq!(
        actions
            .iter()
            .filter(|a| *a == "issue.context_compaction_requested")
            .count(),
        1,
        "{actions:?}"
    );
    let _ = std::fs::remove_dir_all(&cli.home);
}
