//! The process adapter against real child processes.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{invocation, RecordingSink};
use paperclip_adapters::process::ProcessAdapter;
use paperclip_adapters::{Adapter, ErrorCode, Invocation, Outcome, OutcomeStatus, Stream};
use serde_json::{json, Value};

fn sh(script: &str, extra: Value) -> Invocation {
    let mut config = json!({"command": "sh", "args": ["-c", script]});
    config
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    invocation(config)
}

async fn run(inv: Invocation) -> (Outcome, Arc<RecordingSink>) {
    let sink = RecordingSink::new();
    let outcome = ProcessAdapter.invoke(inv, sink.clone()).await;
    (outcome, sink)
}

/// Gone, or a zombie nobody has reaped yet (it holds no resources).
fn pid_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(") ")
            .next()
            .is_some_and(|rest| rest.starts_with('Z')),
    }
}

fn parse_pid(line: &str) -> Option<u32> {
    line.trim().strip_prefix("pid=")?.parse().ok()
}

#[tokio::test]
async fn streams_are_captured_in_order_and_success_reported() {
    let script = r"printf 'one\n'; printf 'err1\n' >&2; printf 'two\n'; printf '\377bytes\n'; printf 'err2\n' >&2; printf 'partial'";
    let mut inv = sh(script, json!({}));
    let default_cwd = common::temp_dir("default-cwd");
    inv.default_cwd = default_cwd.clone();
    let (out, sink) = run(inv).await;

    assert_eq!(out.status, OutcomeStatus::Succeeded, "{out:?}");
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.error_code, None);
    assert_eq!(
        sink.text(Stream::Stdout),
        "one\ntwo\n\u{fffd}bytes\npartial"
    );
    assert_eq!(sink.text(Stream::Stderr), "err1\nerr2\n");
    assert!(default_cwd.is_dir(), "default cwd is created");
    std::fs::remove_dir(&default_cwd).unwrap();

    let (pid, pgid) = sink
        .started
        .lock()
        .unwrap()
        .expect("process_started called");
    assert_eq!(pid, pgid, "child leads its own process group");
    let started = sink.events_of("adapter.invoke");
    assert_eq!(started.len(), 1);
    assert_eq!(started[0].level, "info");
    assert_eq!(started[0].message, "started sh");
    assert_eq!(started[0].payload["command"], "sh");
    assert_eq!(started[0].payload["args"][0], "-c");
    assert_eq!(started[0].payload["cwd"], default_cwd.display().to_string());
}

#[tokio::test]
async fn output_is_streamed_before_the_process_ends() {
    let inv = sh("echo early; printf 'no newline yet'; sleep 30", json!({}));
    let cancel = inv.cancel.clone();
    let sink = RecordingSink::new();
    let task = tokio::spawn({
        let sink = sink.clone();
        async move { ProcessAdapter.invoke(inv, sink).await }
    });
    sink.wait_for_line(Stream::Stdout, |l| (l == "early").then_some(()))
        .await;
    sink.wait_for_line(Stream::Stdout, |l| (l == "no newline yet").then_some(()))
        .await;
    cancel.cancel();
    assert_eq!(task.await.unwrap().status, OutcomeStatus::Cancelled);
}

#[tokio::test]
async fn nonzero_exit_fails_with_last_stderr_line() {
    let (out, _) = run(sh(
        "echo working; echo first >&2; echo 'boom: disk full' >&2; echo >&2; exit 3",
        json!({}),
    ))
    .await;
    assert_eq!(out.status, OutcomeStatus::Failed);
    assert_eq!(out.error_code, Some(ErrorCode::NonzeroExit));
    assert_eq!(out.exit_code, Some(3));
    let error = out.error.unwrap();
    assert!(
        error.contains("code 3") && error.contains("boom: disk full"),
        "{error}"
    );
}

#[tokio::test]
async fn death_by_foreign_signal_is_a_failure_naming_it() {
    let (out, _) = run(sh("kill -9 $$", json!({}))).await;
    assert_eq!(out.status, OutcomeStatus::Failed);
    assert_eq!(out.signal.as_deref(), Some("SIGKILL"));
    assert!(out.error.unwrap().contains("SIGKILL"));
}

#[tokio::test]
async fn missing_command_is_adapter_not_installed() {
    let (out, _) = run(invocation(
        json!({"command": "paperclip-no-such-agent-cli"}),
    ))
    .await;
    assert_eq!(out.status, OutcomeStatus::Failed);
    assert_eq!(out.error_code, Some(ErrorCode::AdapterNotInstalled));
    assert!(out.error.unwrap().contains("paperclip-no-such-agent-cli"));
}

#[tokio::test]
async fn bad_cwd_is_rejected_before_spawning() {
    let (out, sink) = run(sh("echo ran", json!({"cwd": "/nonexistent/paperclip/dir"}))).await;
    assert_eq!(out.error_code, Some(ErrorCode::InvalidWorkingDirectory));
    assert!(sink.started.lock().unwrap().is_none());

    let (out, _) = run(sh("echo ran", json!({"cwd": "/etc/hostname"}))).await;
    assert_eq!(out.error_code, Some(ErrorCode::InvalidWorkingDirectory));
    assert!(out.error.unwrap().contains("not a directory"));
}

#[tokio::test]
async fn configured_cwd_is_used() {
    let (out, sink) = run(sh("pwd", json!({"cwd": "/tmp"}))).await;
    assert_eq!(out.status, OutcomeStatus::Succeeded);
    assert_eq!(sink.text(Stream::Stdout), "/tmp\n");
}

#[tokio::test]
async fn timeout_terminates_with_sigterm() {
    let begin = Instant::now();
    let (out, sink) = run(sh("sleep 30", json!({"timeoutSec": 1, "graceSec": 2}))).await;
    assert!(
        begin.elapsed() < Duration::from_secs(6),
        "took {:?}",
        begin.elapsed()
    );
    assert_eq!(out.status, OutcomeStatus::TimedOut);
    assert_eq!(out.error_code, Some(ErrorCode::Timeout));
    assert_eq!(out.signal.as_deref(), Some("SIGTERM"));

    let (_, pgid) = sink.started.lock().unwrap().unwrap();
    assert!(sink
        .text(Stream::System)
        .contains(&format!("sent SIGTERM to process group {pgid}")));
    let signals = sink.events_of("adapter.signal");
    assert_eq!(signals.len(), 1);
    assert_eq!(signals[0].level, "warn");
    assert_eq!(signals[0].payload["signal"], "SIGTERM");
}

#[tokio::test]
async fn cancel_kills_the_whole_process_group() {
    let grace = 2;
    let inv = sh(
        "sleep 60 & echo pid=$!; sleep 60",
        json!({"graceSec": grace}),
    );
    let cancel = inv.cancel.clone();
    let sink = RecordingSink::new();
    let task = tokio::spawn({
        let sink = sink.clone();
        async move { ProcessAdapter.invoke(inv, sink).await }
    });
    let grandchild = sink.wait_for_line(Stream::Stdout, parse_pid).await;
    assert!(!pid_gone(grandchild));

    let cancelled_at = Instant::now();
    cancel.cancel();
    let out = task.await.unwrap();
    assert_eq!(out.status, OutcomeStatus::Cancelled);
    assert_eq!(out.error_code, Some(ErrorCode::Cancelled));
    while !pid_gone(grandchild) {
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(grace + 1),
            "grandchild {grandchild} survived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn child_that_handles_term_ends_with_sigterm_within_grace() {
    let script = "trap 'echo got term; exit 0' TERM; echo ready; while :; do sleep 0.1; done";
    let inv = sh(script, json!({"graceSec": 5}));
    let cancel = inv.cancel.clone();
    let sink = RecordingSink::new();
    let task = tokio::spawn({
        let sink = sink.clone();
        async move { ProcessAdapter.invoke(inv, sink).await }
    });
    sink.wait_for_line(Stream::Stdout, |l| (l == "ready").then_some(()))
        .await;
    let cancelled_at = Instant::now();
    cancel.cancel();
    let out = task.await.unwrap();
    assert!(cancelled_at.elapsed() < Duration::from_secs(5));
    assert_eq!(out.status, OutcomeStatus::Cancelled);
    assert_eq!(out.signal.as_deref(), Some("SIGTERM"));
    assert_eq!(out.exit_code, Some(0));
    assert!(sink.text(Stream::Stdout).contains("got term"));
    assert!(!sink.text(Stream::System).contains("SIGKILL"));
}

/// A stop that must not wait (a budget reached) kills at once: a child that
/// keeps working after TERM gets no grace to spend in.
#[tokio::test]
async fn a_stop_now_skips_the_grace() {
    let script = "trap '' TERM; echo ready; while :; do sleep 0.1; done";
    let inv = sh(script, json!({"graceSec": 30}));
    let (cancel, stop_now) = (inv.cancel.clone(), inv.stop_now.clone());
    let sink = RecordingSink::new();
    let task = tokio::spawn({
        let sink = sink.clone();
        async move { ProcessAdapter.invoke(inv, sink).await }
    });
    sink.wait_for_line(Stream::Stdout, |l| (l == "ready").then_some(()))
        .await;
    let stopped_at = Instant::now();
    stop_now.cancel();
    cancel.cancel();
    let out = task.await.unwrap();
    assert!(
        stopped_at.elapsed() < Duration::from_secs(10),
        "waited for the grace: {:?}",
        stopped_at.elapsed()
    );
    assert_eq!(out.status, OutcomeStatus::Cancelled);
    assert_eq!(out.signal.as_deref(), Some("SIGKILL"));
}

#[tokio::test]
async fn child_that_ignores_term_gets_sigkill_after_grace() {
    let script = "trap '' TERM; echo ready; while :; do sleep 0.1; done";
    let begin = Instant::now();
    let (out, sink) = run(sh(script, json!({"timeoutSec": 1, "graceSec": 1}))).await;
    let elapsed = begin.elapsed();
    assert!(
        elapsed >= Duration::from_secs(2),
        "SIGKILL came before the grace period: {elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert_eq!(out.status, OutcomeStatus::TimedOut);
    assert_eq!(out.signal.as_deref(), Some("SIGKILL"));
    let system = sink.text(Stream::System);
    assert!(
        system.contains("sent SIGTERM") && system.contains("sent SIGKILL"),
        "{system}"
    );
    let signals: Vec<_> = sink
        .events_of("adapter.signal")
        .iter()
        .map(|e| e.payload["signal"].clone())
        .collect();
    assert_eq!(signals, [json!("SIGTERM"), json!("SIGKILL")]);
}

#[tokio::test]
async fn prompt_arrives_on_stdin() {
    let mut inv = invocation(json!({"command": "cat"}));
    inv.prompt = Some("You are agent-1.\nDo the thing.".into());
    let (out, sink) = run(inv).await;
    assert_eq!(out.status, OutcomeStatus::Succeeded);
    assert_eq!(sink.text(Stream::Stdout), "You are agent-1.\nDo the thing.");

    // Without a prompt stdin is empty rather than inherited, so `cat` ends.
    let (out, sink) = run(invocation(json!({"command": "cat"}))).await;
    assert_eq!(out.status, OutcomeStatus::Succeeded);
    assert_eq!(sink.text(Stream::Stdout), "");
}

#[tokio::test]
async fn env_layers_and_paperclip_vars_win() {
    let config_env =
        json!({"env": {"PAPERCLIP_RUN_ID": "forged", "AGENT_FLAVOR": "config-secret"}});
    let (out, sink) = run(sh(
        r#"echo "$PAPERCLIP_RUN_ID|$PAPERCLIP_API_KEY|$AGENT_FLAVOR|${PATH:+inherited}""#,
        config_env,
    ))
    .await;
    assert_eq!(out.status, OutcomeStatus::Succeeded);
    assert_eq!(
        sink.text(Stream::Stdout),
        "run-1|secret-key|config-secret|inherited\n"
    );

    let events = format!("{:?}", sink.events.lock().unwrap());
    let system = sink.text(Stream::System);
    for secret in ["secret-key", "config-secret"] {
        assert!(
            !events.contains(secret) && !system.contains(secret),
            "{secret} leaked"
        );
    }
}

#[tokio::test]
async fn background_child_holding_the_pipe_does_not_hang_the_run() {
    let begin = Instant::now();
    let (out, sink) = run(sh("sleep 30 & echo pid=$!", json!({}))).await;
    assert_eq!(out.status, OutcomeStatus::Succeeded);
    assert!(
        begin.elapsed() < Duration::from_secs(6),
        "took {:?}",
        begin.elapsed()
    );
    let stray = sink
        .text(Stream::Stdout)
        .lines()
        .find_map(parse_pid)
        .unwrap();
    let _ = std::process::Command::new("kill")
        .arg(stray.to_string())
        .status();
}

#[test]
fn config_errors_carry_json_paths() {
    let adapter = ProcessAdapter;
    let paths = |config: Value| -> Vec<String> {
        adapter
            .validate_config(&config)
            .unwrap_err()
            .into_iter()
            .map(|e| e.path.join("."))
            .collect()
    };
    assert_eq!(paths(json!({})), ["command"]);
    assert_eq!(paths(json!({"command": "  "})), ["command"]);
    assert_eq!(
        paths(
            json!({"command": "x", "args": ["a", 1], "env": {"K": 2}, "timeoutSec": -1, "graceSec": "5"})
        ),
        ["args.1", "env.K", "timeoutSec", "graceSec"]
    );
    assert_eq!(paths(json!("sh")), [""]);
    assert!(adapter
        .validate_config(&json!({"command": "x", "args": [], "cwd": "/", "env": {"A": "b"}, "timeoutSec": 0, "graceSec": 1.5}))
        .is_ok());
}
