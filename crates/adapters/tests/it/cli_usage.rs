//! A coding CLI's usage reaches the sink while the CLI runs, turn by turn,
//! priced as the end-of-run summary will be. The CLIs are stand-in scripts
//! printing their JSON streams (the real ones run in the black-box suite).

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{invocation, temp_dir, RecordingSink};
use paperclip_adapters::OutcomeStatus;
use serde_json::{json, Value};

/// An executable that prints `lines` and exits 0, whatever its arguments.
fn fake_cli(tag: &str, lines: &[&str]) -> PathBuf {
    let dir = temp_dir(tag);
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("stream.jsonl");
    std::fs::write(&data, lines.join("\n") + "\n").unwrap();
    let bin = dir.join("cli");
    std::fs::write(
        &bin,
        format!("#!/bin/sh\ncat >/dev/null\ncat '{}'\n", data.display()),
    )
    .unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

async fn run(
    kind: &str,
    bin: &Path,
    config: Value,
) -> (paperclip_adapters::Outcome, std::sync::Arc<RecordingSink>) {
    let adapter = paperclip_adapters::registry()[kind].clone();
    let mut config = config;
    config["command"] = json!(bin.display().to_string());
    let mut inv = invocation(config);
    inv.prompt = Some("work".into());
    let sink = RecordingSink::new();
    let out = adapter.invoke(inv, sink.clone()).await;
    (out, sink)
}

#[tokio::test]
async fn codex_reports_each_completed_turn_priced_by_its_model() {
    let bin = fake_cli(
        "codex-usage",
        &[
            r#"{"type":"thread.started","thread_id":"th-1"}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1000000,"cached_input_tokens":0,"output_tokens":0}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1000000,"cached_input_tokens":1000000,"output_tokens":0}}"#,
        ],
    );
    let (out, sink) = run("codex_local", &bin, json!({ "model": "gpt-5" })).await;
    assert_eq!(out.status, OutcomeStatus::Succeeded, "{out:?}");
    let reports = sink.usage.lock().unwrap().clone();
    assert_eq!(reports.len(), 2, "{reports:?}");
    assert_eq!(reports[0].model.as_deref(), Some("gpt-5"));
    assert_eq!(reports[0].provider, "openai");
    assert_eq!(reports[0].input_tokens, 1_000_000);
    assert_eq!(reports[0].cost_usd, Some(1.25));
    // Cumulative, not per turn.
    assert_eq!(reports[1].cached_input_tokens, 1_000_000);
    assert_eq!(reports[1].cost_usd, Some(1.25 + 0.125));
    assert_eq!(out.usage.unwrap()["costUsd"], json!(1.375));
}

#[tokio::test]
async fn an_unpriced_model_reports_tokens_without_a_cost() {
    let bin = fake_cli(
        "opencode-usage",
        &[
            r#"{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}"#,
            r#"{"type":"step_finish","sessionID":"ses_1","part":{"type":"step-finish","reason":"stop","tokens":{"input":700,"output":30,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0}}"#,
        ],
    );
    let (_, sink) = run(
        "opencode_local",
        &bin,
        json!({ "model": "mock/mock-model" }),
    )
    .await;
    let reports = sink.usage.lock().unwrap().clone();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].input_tokens, 700);
    assert_eq!(reports[0].output_tokens, 30);
    assert_eq!(reports[0].cost_usd, None);
    assert_eq!(reports[0].cost_cents(), None);
}

#[tokio::test]
async fn claude_reports_each_request_once_and_ends_with_its_own_totals() {
    let msg = |id: &str, block: &str| {
        format!(
            r#"{{"type":"assistant","session_id":"s","message":{{"id":"{id}","model":"claude-haiku-4-5","content":[{block}],"usage":{{"input_tokens":100000,"output_tokens":0}}}}}}"#
        )
    };
    let lines = [
        r#"{"type":"system","subtype":"init","session_id":"s","model":"claude-haiku-4-5","tools":[]}"#.to_string(),
        msg("m1", r#"{"type":"text","text":"a"}"#),
        msg("m1", r#"{"type":"tool_use","id":"t","name":"Bash","input":{}}"#),
        msg("m2", r#"{"type":"text","text":"b"}"#),
        r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s","total_cost_usd":0.25,"usage":{"input_tokens":210000,"output_tokens":5}}"#.to_string(),
    ];
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let bin = fake_cli("claude-usage", &refs);
    let (out, sink) = run("claude_local", &bin, json!({})).await;
    assert_eq!(out.status, OutcomeStatus::Succeeded, "{out:?}");
    let costs: Vec<Option<f64>> = sink
        .usage
        .lock()
        .unwrap()
        .iter()
        .map(|u| u.cost_usd)
        .collect();
    // m1 (twice, same figures: one report), m2, then the CLI's totals.
    assert_eq!(costs.len(), 3, "{costs:?}");
    assert!((costs[0].unwrap() - 0.1).abs() < 1e-9);
    assert!((costs[1].unwrap() - 0.2).abs() < 1e-9);
    assert_eq!(costs[2], Some(0.25));
    // Only the totals say the run is ending (a stop then would be moot).
    let finished: Vec<bool> = sink
        .usage
        .lock()
        .unwrap()
        .iter()
        .map(|u| u.finished)
        .collect();
    assert_eq!(finished, [false, false, true]);
    let usage = out.usage.unwrap();
    assert_eq!(usage["inputTokens"], json!(210_000));
    assert_eq!(usage["costUsd"], json!(0.25));
}
