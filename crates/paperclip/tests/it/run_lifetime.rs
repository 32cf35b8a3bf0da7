//! What a run carries for its whole life: its credentials last as long as the
//! run does (however long the agent's own timeout is, or without one) and no
//! longer.

use crate::common;

use common::TestServer;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// Seven days: the expiry of a token whose agent sets no timeout.
const CEILING_SECS: i64 = 7 * 24 * 3600;

/// Writes the run's token and the answer it got from the API to files next to
/// the script, so the test reads the token the agent really had (the run log
/// shows it redacted).
const DUMP_TOKEN: &str = r#"dir=$(dirname "$0")
printf '%s' "$PAPERCLIP_API_KEY" > "$dir/token-$PAPERCLIP_AGENT_ID"
curl -s -o /dev/null -w '%{http_code}' \
  -H "Authorization: Bearer $PAPERCLIP_API_KEY" \
  -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" \
  -H 'Content-Type: application/json' \
  "$PAPERCLIP_API_URL/api/agents/me" > "$dir/me-$PAPERCLIP_AGENT_ID"
"#;

fn base64url_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'-' => 62,
        b'_' => 63,
        _ => panic!("not base64url: {c}"),
    };
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes().filter(|c| *c != b'=') {
        acc = (acc << 6) | value(c) as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWT has three parts");
    serde_json::from_slice(&base64url_decode(payload)).unwrap()
}

struct Run {
    token: String,
    me_status: String,
    run: Value,
}

/// Wakes the agent, waits for its run to end and reads what it dumped.
async fn run_once(s: &TestServer, agent: &Value) -> Run {
    let aid = agent["id"].as_str().unwrap();
    let run = s.wake(&aid, json!({})).await;
    let run_id = run["id"].as_str().expect("the wake queued a run");
    let run = s
        .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 30, |r| {
            r["status"] != "queued" && r["status"] != "running"
        })
        .await;
    let read = |name: &str| {
        std::fs::read_to_string(s.data_dir.join(format!("{name}-{aid}")))
            .unwrap_or_else(|e| panic!("the agent wrote no {name}: {e}; run {run}"))
    };
    Run {
        token: read("token"),
        me_status: read("me"),
        run: run.clone(),
    }
}

async fn assert_refused_after_the_run(s: &TestServer, r: &Run) {
    let run_id = r.run["id"].as_str().unwrap();
    let (status, body) = s
        .as_agent(&r.token, Some(run_id), "GET", "/api/agents/me", None)
        .await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a finished run's token still works: {body}"
    );
}

#[tokio::test]
async fn a_run_token_lasts_as_long_as_the_agent_timeout_allows_and_ends_with_the_run() {
    let s = TestServer::start().await;
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();

    // No timeout of its own (`timeoutSec: 0`): the token takes the long ceiling.
    let unbounded = s
        .script_agent(&cid, "Unbounded", DUMP_TOKEN, json!({ "timeoutSec": 0 }))
        .await;
    let r = run_once(&s, &unbounded).await;
    assert_eq!(r.run["status"], "succeeded", "{}", r.run);
    assert_eq!(r.me_status, "200", "the token works during the run");
    let c = claims(&r.token);
    let ttl = c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap();
    assert_eq!(ttl, CEILING_SECS, "{c}");
    assert_eq!(c["run_id"], r.run["id"]);
    assert_refused_after_the_run(&s, &r).await;

    // A fractional timeout is honoured, not read as the 600 s default.
    let long = s
        .script_agent(
            &cid,
            "Long",
            DUMP_TOKEN,
            json!({ "timeoutSec": 1800.5, "graceSec": 7.5 }),
        )
        .await;
    let r = run_once(&s, &long).await;
    assert_eq!(r.me_status, "200");
    let c = claims(&r.token);
    let ttl = c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap();
    assert!(
        ttl as f64 >= 1800.5 + 7.5,
        "ttl {ttl} < timeout + grace: {c}"
    );
    assert!(ttl <= CEILING_SECS, "{c}");
    assert_refused_after_the_run(&s, &r).await;
}

/// A coding CLI agent without `timeoutSec` runs unbounded, so its token must
/// too. The "CLI" here is a script in its place: only the credentials it is
/// handed matter.
#[tokio::test]
async fn a_coding_agent_without_a_timeout_gets_a_token_for_the_whole_run() {
    let s = TestServer::start().await;
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    for kind in ["claude_local", "codex_local"] {
        let script = s.data_dir.join(format!("fake-{kind}"));
        std::fs::write(&script, format!("#!/bin/sh\n{DUMP_TOKEN}")).unwrap();
        std::process::Command::new("chmod")
            .arg("+x")
            .arg(&script)
            .status()
            .unwrap();
        let agent = s
            .ok_post(
                &format!("/api/companies/{cid}/agents"),
                json!({ "name": format!("Coder {kind}"), "adapterType": kind,
                        "adapterConfig": { "command": script.to_str().unwrap() } }),
            )
            .await;
        let r = run_once(&s, &agent).await;
        assert_eq!(r.me_status, "200", "{kind}: {}", r.run);
        let c = claims(&r.token);
        let ttl = c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap();
        assert_eq!(ttl, CEILING_SECS, "{kind}: {c}");
        assert_refused_after_the_run(&s, &r).await;
    }
}
