use serde_json::json;

use super::super::stream::{Item, StreamParser, Usage};
use super::*;

/// Lines gemini 0.61 printed against the scripted provider.
const WORKED: &[&str] = &[
    r#"{"type":"init","timestamp":"2026-12-07T08:05:27.616Z","session_id":"7eadbb86-1ff2","model":"gemini-2.5-flash"}"#,
    r#"{"type":"message","timestamp":"2026-12-07T08:05:27.617Z","role":"user","content":"say hi"}"#,
    r#"{"type":"tool_use","timestamp":"2026-12-07T08:05:27.682Z","tool_name":"run_shell_command","tool_id":"run_shell_command_1","parameters":{"command":"echo hello","description":"Run it"}}"#,
    r#"{"type":"tool_result","timestamp":"2026-12-07T08:05:27.740Z","tool_id":"run_shell_command_1","status":"success","output":"hello"}"#,
    r#"{"type":"message","timestamp":"2026-12-07T08:05:27.748Z","role":"assistant","content":"All done ","delta":true}"#,
    r#"{"type":"message","timestamp":"2026-12-07T08:05:27.749Z","role":"assistant","content":"here.","delta":true}"#,
    r#"{"type":"result","timestamp":"2026-12-07T08:05:27.750Z","status":"success","stats":{"total_tokens":23599,"input_tokens":23535,"output_tokens":64,"cached":0,"input":23535,"duration_ms":134,"tool_calls":1,"models":{"gemini-2.5-flash":{"total_tokens":23599,"input_tokens":23535,"output_tokens":64,"cached":0,"input":23535}}}}"#,
];

fn parse(lines: &[&str]) -> (Vec<Item>, GeminiParser) {
    let mut p = GeminiParser::default();
    let items = lines.iter().flat_map(|l| p.line(l)).collect();
    (items, p)
}

#[test]
fn a_run_gives_session_steps_one_reply_and_priced_tokens() {
    let (items, p) = parse(WORKED);
    assert_eq!(items.len(), 4, "{items:?}");
    assert!(
        matches!(&items[0], Item::Init { session_id: Some(s), model: Some(m), .. }
        if s == "7eadbb86-1ff2" && m == "gemini-2.5-flash")
    );
    assert!(matches!(&items[1], Item::ToolCall { name, .. } if name == "run_shell_command"));
    assert!(
        matches!(&items[2], Item::ToolResult { output, is_error: false, .. } if output == "hello")
    );
    assert_eq!(
        items[3],
        Item::Assistant {
            text: "All done here.".into()
        }
    );
    assert!(p.finished());
    let s = p.summary();
    assert!(s.completed && s.error.is_none());
    assert_eq!(s.session_id.as_deref(), Some("7eadbb86-1ff2"));
    assert_eq!(s.result_text.as_deref(), Some("All done here."));
    assert_eq!(s.usage.input_tokens, 23535);
    assert_eq!(s.usage.output_tokens, 64);
    let cost = s.usage.cost_usd.unwrap();
    let expected = 23535.0 * 0.30 / 1e6 + 64.0 * 2.50 / 1e6;
    assert!((cost - expected).abs() < 1e-12, "{cost}");
}

#[test]
fn cached_and_thinking_tokens_are_split_and_each_model_is_priced() {
    let line = json!({ "type": "result", "status": "success", "stats": { "models": {
        "gemini-2.5-pro": { "input_tokens": 1000, "cached": 400, "output_tokens": 50, "total_tokens": 1080 },
        "gemini-2.5-flash-lite": { "input_tokens": 200, "cached": 0, "output_tokens": 10, "total_tokens": 210 },
    } } })
    .to_string();
    let (_, p) = parse(&[&line]);
    let s = p.summary();
    assert_eq!(s.usage.input_tokens, 600 + 200);
    assert_eq!(s.usage.cached_input_tokens, 400);
    // 30 thinking tokens on Pro count as output.
    assert_eq!(s.usage.output_tokens, 80 + 10);
    let pro = 600.0 * 1.25 + 400.0 * 0.125 + 80.0 * 10.0;
    let lite = 200.0 * 0.10 + 10.0 * 0.40;
    assert!((s.usage.cost_usd.unwrap() - (pro + lite) / 1e6).abs() < 1e-12);
    assert_eq!(s.model.as_deref(), Some("gemini-2.5-pro"));
    // A model without a price leaves the run's cost unknown, tokens kept.
    let line = line.replace("gemini-2.5-flash-lite", "gemini-9-ultra");
    let s = parse(&[&line]).1.summary();
    assert_eq!(s.usage.cost_usd, None);
    assert_eq!(s.usage.input_tokens, 800);
}

#[test]
fn prices_follow_the_longest_model_prefix_and_pros_long_prompt_rate() {
    let million = |input, cached, output| Usage {
        input_tokens: input,
        cached_input_tokens: cached,
        output_tokens: output,
        cost_usd: None,
    };
    let one = million(1_000_000, 0, 0);
    assert_eq!(price("gemini-2.5-flash-lite", &one), Some(0.10));
    assert_eq!(
        price("gemini-2.5-flash-lite-preview-06-17", &one),
        Some(0.10)
    );
    assert_eq!(price("models/gemini-2.5-flash", &one), Some(0.30));
    assert_eq!(price("gemini-2.5-flash-image", &one), None);
    assert_eq!(price("gemini-3-pro-preview", &one), None);
    // Under 200k prompt tokens in all, each prompt was: the short rate.
    assert_eq!(
        price("gemini-2.5-pro", &million(100_000, 100_000, 0)),
        Some(0.1 * 1.25 + 0.1 * 0.125)
    );
    assert_eq!(price("gemini-2.5-pro", &one), Some(2.50));
}

#[test]
fn failures_keep_the_clis_words_and_are_classified() {
    use crate::cli::classify::classify;
    use crate::ErrorCode;
    let cases = [
        (
            r#"{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: models/no-such-model is not found for API version v1beta, or is not supported for generateContent.]"},"stats":{"total_tokens":0}}"#,
            ErrorCode::ModelUnavailable,
        ),
        (
            r#"{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: You exceeded your current quota, please check your plan and billing details. Please retry in 3600s.\nSuggested retry after 3600s.]\nPlease wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method"},"stats":{}}"#,
            ErrorCode::RateLimited,
        ),
        (
            r#"{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":400,\"message\":\"The input token count (1100000) exceeds the maximum number of tokens allowed (1048576).\",\"status\":\"INVALID_ARGUMENT\"}}]"},"stats":{}}"#,
            ErrorCode::ContextWindowExceeded,
        ),
    ];
    for (line, code) in cases {
        let (items, p) = parse(&[line]);
        assert!(items.is_empty());
        let s = p.summary();
        assert!(!s.completed && p.finished());
        let error = s.error.expect("the error is kept");
        assert_eq!(classify(&error), Some(code), "{error}");
    }
    // What gemini prints on stderr without a usable key.
    for said in [
        "When using Gemini API, you must specify the GEMINI_API_KEY environment variable.",
        "Invalid auth method selected.",
        "Update your environment and try again (no reload needed if using .env)!",
    ] {
        assert_eq!(classify(said), Some(ErrorCode::AuthRequired), "{said}");
    }
}

#[test]
fn warnings_do_not_fail_the_run_and_errors_do() {
    let (items, p) = parse(&[
        r#"{"type":"error","severity":"warning","message":"Loop detected, stopping execution"}"#,
    ]);
    assert_eq!(items.len(), 1);
    assert!(p.summary().error.is_none());
    let (_, p) = parse(&[
        r#"{"type":"error","severity":"error","message":"Maximum session turns exceeded"}"#,
    ]);
    assert_eq!(
        p.summary().error.as_deref(),
        Some("Maximum session turns exceeded")
    );
}

#[test]
fn an_unknown_session_is_a_rejected_resume() {
    let said = "Error resuming session: Invalid session identifier \"00000000-1ff2\".\n  Searched for sessions in /h/.gemini/tmp/work/chats.";
    assert!(Gemini.resume_rejected(said));
    assert!(!Gemini.resume_rejected(
        "The input token count (1100000) exceeds the maximum number of tokens allowed"
    ));
}

fn built(config: serde_json::Value, session: Option<&str>) -> Built {
    let adapter = super::super::CliAdapter::new(Gemini);
    let (cfg, extra) = adapter.parse_config(&config).unwrap();
    let dir = std::env::temp_dir();
    Gemini
        .build(&RunSpec {
            config: &cfg,
            extra: &extra,
            prompt: "Work on ACM-1",
            session_id: session,
            cwd: &dir,
            skills_dir: None,
            scratch: &dir,
        })
        .unwrap()
}

#[test]
fn the_command_line_is_upstreams() {
    let b = built(
        json!({ "model": "gemini-2.5-pro", "extraArgs": ["--debug"] }),
        Some("s-1"),
    );
    assert_eq!(
        b.args[..10],
        [
            "--output-format",
            "stream-json",
            "--resume",
            "s-1",
            "--model",
            "gemini-2.5-pro",
            "--approval-mode",
            "yolo",
            "--sandbox=none",
            "--debug"
        ]
    );
    assert_eq!(b.args[10], "--prompt");
    assert!(b.args[11].starts_with("Work on ACM-1"));
    assert!(!b.prompt_on_stdin);
    assert_eq!(b.env["NO_BROWSER"], "1");
    assert_eq!(b.env["GEMINI_CLI_TRUST_WORKSPACE"], "true");
    assert_eq!(b.env["GEMINI_CLI_NO_RELAUNCH"], "true");
    // "auto" lets the CLI choose: no --model; a sandbox asked for is passed.
    let b = built(json!({ "model": "auto", "sandbox": true }), None);
    assert!(!b.args.iter().any(|a| a == "--model" || a == "--resume"));
    assert!(b.args.iter().any(|a| a == "--sandbox"));
}

#[test]
fn a_dumb_terminal_is_replaced_and_a_real_one_kept() {
    assert_eq!(headless_env(Some("dumb"))["TERM"], "xterm-256color");
    assert_eq!(headless_env(None)["TERM"], "xterm-256color");
    assert!(!headless_env(Some("screen-256color")).contains_key("TERM"));
}

#[test]
fn skills_are_linked_and_a_users_own_folder_is_left_alone() {
    let root = std::env::temp_dir().join(format!("gemini-skills-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let skills = root.join("skills");
    std::fs::create_dir_all(skills.join("paperclip")).unwrap();
    std::fs::create_dir_all(skills.join("mine")).unwrap();
    let target = root.join("home/.gemini/skills");
    std::fs::create_dir_all(target.join("mine")).unwrap();
    let notes = link_skills(&skills, &target);
    assert_eq!(
        std::fs::read_link(target.join("paperclip")).unwrap(),
        skills.join("paperclip")
    );
    assert!(target.join("mine").is_dir() && !target.join("mine").is_symlink());
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        link_skills(&skills, &target).len() == 1,
        "linking again changes nothing"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn upstream_gemini_keys_are_known_and_others_named() {
    // Upstream's UI output for an ACP agent plus its CLI-engine keys.
    let good = json!({
        "cwd": "/tmp", "instructionsFilePath": "/tmp/AGENTS.md", "engine": "acp",
        "agentCommand": "gemini --acp", "mode": "persistent", "nonInteractivePermissions": "deny",
        "stateDir": "/tmp/acp", "warmHandleIdleMs": 0, "model": "auto", "timeoutSec": 0,
        "graceSec": 15, "env": { "GEMINI_API_KEY": "x" }, "sandbox": true, "command": "gemini",
        "extraArgs": ["--debug"], "approvalMode": "yolo", "yolo": true, "helloProbeTimeoutSec": 60,
        "promptTemplate": "Work", "bootstrapPromptTemplate": "Start", "permissionMode": "approve-all",
    });
    let adapter = super::super::CliAdapter::new(Gemini);
    crate::config::assert_keys(&adapter, good, "variant");
}
