use super::*;
use crate::cli::stream::Item;
use crate::Adapter;
use serde_json::json;

fn adapter() -> super::super::CliAdapter<Pi> {
    super::super::CliAdapter::new(Pi)
}

#[test]
fn the_originals_pi_config_is_accepted_unchanged() {
    // What the original's hire form builds, with its documented keys and
    // the custom-provider workaround for a local model.
    let providers = json!({ "ollama": { "baseUrl": "http://127.0.0.1:11434/v1",
        "api": "openai-completions", "apiKey": "ollama",
        "models": [{ "id": "qwen3:8b", "cost": { "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0 } }] } });
    let good = json!({
        "cwd": "/tmp", "instructionsFilePath": "/tmp/AGENTS.md", "model": "ollama/qwen3:8b",
        "thinking": "high", "timeoutSec": 0, "graceSec": 20, "command": "pi",
        "extraArgs": [], "args": [], "promptTemplate": "Go", "bootstrapPromptTemplate": "Hi",
        "env": { "PAPERCLIP_PI_PROVIDERS": providers.to_string() },
        "paperclipSkillSync": { "desiredSkills": [] },
    });
    crate::config::assert_keys(&adapter(), good, "engine");
}

#[test]
fn bad_models_thinking_and_providers_are_refused_with_their_field() {
    let errors = |c: Value| {
        adapter()
            .validate_config(&c)
            .unwrap_err()
            .into_iter()
            .map(|e| e.path.join("."))
            .collect::<Vec<_>>()
    };
    assert_eq!(errors(json!({})), ["model"]);
    assert_eq!(errors(json!({ "model": "qwen3" })), ["model"]);
    assert_eq!(
        errors(json!({ "model": "a/b", "thinking": "max" })),
        ["thinking"]
    );
    assert_eq!(
        errors(json!({ "model": "a/b", "env": { "PAPERCLIP_PI_PROVIDERS": "{nope" } })),
        ["env.PAPERCLIP_PI_PROVIDERS"]
    );
}

#[test]
fn the_command_line_is_the_originals() {
    let scratch = std::env::temp_dir().join(format!("pi-build-test-{}", std::process::id()));
    let skills = scratch.join("skills");
    for s in ["paperclip", "review"] {
        std::fs::create_dir_all(skills.join(s)).unwrap();
        std::fs::write(skills.join(s).join("SKILL.md"), "---\nname: x\n---\n").unwrap();
    }
    let (config, extra) = adapter()
        .parse_config(&json!({ "model": "openrouter/anthropic/claude-sonnet-4.5",
                               "thinking": "low", "extraArgs": ["--offline"] }))
        .unwrap();
    let run = RunSpec {
        config: &config,
        extra: &extra,
        prompt: "@work the task",
        session_id: None,
        cwd: Path::new("/tmp"),
        skills_dir: Some(&skills),
        scratch: &scratch,
    };
    let built = Pi.build(&run).unwrap();
    let a = built.args.join(" ");
    let session = scratch.join("sessions");
    assert!(
        a.starts_with("--mode json -p --append-system-prompt "),
        "{a}"
    );
    assert!(a.contains("skills/paperclip/SKILL.md --provider openrouter --model anthropic/claude-sonnet-4.5 --thinking low --tools read,bash,edit,write,grep,find,ls --session "), "{a}");
    assert!(
        a.contains(&format!("--session {}/", session.display())),
        "{a}"
    );
    assert!(
        a.ends_with(&format!(
            "--skill {}/review --offline  @work the task",
            skills.display()
        )),
        "{a}"
    );
    assert!(!built.prompt_on_stdin);
    // A resumed run names the saved file.
    let saved = session.join("old.jsonl");
    let resumed = RunSpec {
        session_id: Some(saved.to_str().unwrap()),
        ..run
    };
    let args = Pi.build(&resumed).unwrap().args;
    assert_eq!(
        args[args.iter().position(|a| a == "--session").unwrap() + 1],
        saved.to_str().unwrap()
    );
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn providers_go_to_a_run_dir_and_the_variable_never_to_pi() {
    let scratch = std::env::temp_dir().join(format!("pi-prepare-test-{}", std::process::id()));
    let raw = json!({ "gw": { "baseUrl": "http://127.0.0.1:9/v1", "apiKey": "{env:GW_KEY}",
                              "api": "openai-completions", "models": [{ "id": "m" }] } })
    .to_string();
    let (config, extra) = adapter()
        .parse_config(&json!({ "model": "gw/m", "env": { "PAPERCLIP_PI_PROVIDERS": raw } }))
        .unwrap();
    let run = RunSpec {
        config: &config,
        extra: &extra,
        prompt: "go",
        session_id: None,
        cwd: Path::new("/tmp"),
        skills_dir: None,
        scratch: &scratch,
    };
    let built = Pi.build(&run).unwrap();
    let mut env: BTreeMap<String, String> = config.env.clone();
    env.insert("GW_KEY".into(), "sk-gw".into());
    env.insert("HOME".into(), scratch.join("nohome").display().to_string());
    let prepared = Pi.prepare(&run, &built.args, &mut env).unwrap();
    assert!(!env.contains_key(PROVIDERS_VAR));
    let dir = PathBuf::from(&env[AGENT_DIR_VAR]);
    assert_eq!(prepared.remove_after, std::slice::from_ref(&dir));
    let models: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("models.json")).unwrap()).unwrap();
    assert_eq!(models["providers"]["gw"]["apiKey"], "sk-gw");
    assert!(prepared.notes[0].contains("gw"), "{:?}", prepared.notes);
    let session = prepared.session_id.unwrap();
    assert!(session.starts_with(&scratch.join("sessions").display().to_string()));

    // The saved session is gone, or from another working directory: the
    // resume is refused so the runtime starts afresh.
    let gone = RunSpec {
        session_id: Some(&session),
        ..run
    };
    let err = Pi
        .prepare(&gone, &Pi.build(&gone).unwrap().args, &mut BTreeMap::new())
        .unwrap_err();
    assert_eq!(err.error_code, Some(ErrorCode::ResumeSessionInvalid));
    std::fs::write(&session, "{\"type\":\"session\",\"cwd\":\"/elsewhere\"}\n").unwrap();
    let err = Pi
        .prepare(&gone, &Pi.build(&gone).unwrap().args, &mut BTreeMap::new())
        .unwrap_err();
    assert!(err.error.unwrap().contains("/elsewhere"));
    std::fs::write(&session, "{\"type\":\"session\",\"cwd\":\"/tmp\"}\n").unwrap();
    assert!(Pi
        .prepare(&gone, &Pi.build(&gone).unwrap().args, &mut BTreeMap::new())
        .is_ok());
    std::fs::remove_dir_all(&scratch).unwrap();
}

fn parse(lines: &[Value]) -> (Vec<Item>, Summary) {
    let mut p = PiParser::default();
    let items = lines.iter().flat_map(|l| p.line(&l.to_string())).collect();
    (items, p.summary())
}

fn assistant(content: Value, stop: &str, usage: Value) -> Value {
    json!({ "role": "assistant", "content": content, "provider": "ollama", "model": "qwen3:8b",
            "usage": usage, "stopReason": stop })
}

#[test]
fn a_tool_turn_and_an_answer_give_steps_usage_and_price() {
    let u = json!({ "input": 60, "output": 10, "cacheRead": 40, "cacheWrite": 0,
                    "cost": { "total": 0.00033 } });
    let call = assistant(
        json!([{ "type": "toolCall", "id": "c1", "name": "bash", "arguments": { "command": "ls" } }]),
        "toolUse",
        u.clone(),
    );
    let answer = assistant(json!([{ "type": "text", "text": "All done." }]), "stop", u);
    let (items, s) = parse(&[
        json!({ "type": "session", "id": "x", "cwd": "/tmp" }),
        json!({ "type": "message_end", "message": call }),
        json!({ "type": "tool_execution_end", "toolCallId": "c1", "toolName": "bash",
                "result": { "content": [{ "type": "text", "text": "a.txt\n" }] }, "isError": false }),
        json!({ "type": "turn_end", "message": call }),
        json!({ "type": "message_end", "message": answer }),
        json!({ "type": "turn_end", "message": answer }),
        json!({ "type": "agent_end", "messages": [] }),
    ]);
    assert!(matches!(&items[0], Item::ToolCall { name, .. } if name == "bash"));
    assert!(matches!(&items[1], Item::ToolResult { output, .. } if output == "a.txt\n"));
    assert!(matches!(&items[2], Item::Assistant { text } if text == "All done."));
    assert!(s.completed && s.error.is_none());
    assert_eq!(
        (
            s.usage.input_tokens,
            s.usage.cached_input_tokens,
            s.usage.output_tokens
        ),
        (120, 80, 20)
    );
    assert!((s.usage.cost_usd.unwrap() - 0.00066).abs() < 1e-12);
    assert_eq!(s.model.as_deref(), Some("ollama/qwen3:8b"));
    assert_eq!(s.result_text.as_deref(), Some("All done."));
    assert_eq!(s.num_turns, Some(2));
}

#[test]
fn failures_are_read_from_the_stream_and_classified() {
    let zero = json!({ "input": 0, "output": 0, "cost": { "total": 0 } });
    let failed = |said: &str| {
        let mut m = assistant(json!([]), "error", zero.clone());
        m["errorMessage"] = json!(said);
        m
    };
    let (_, s) = parse(&[
        json!({ "type": "message_end", "message": failed("400 registry.ollama.ai/library/gemma:2b does not support tools") }),
        json!({ "type": "agent_end", "messages": [] }),
    ]);
    let said = s.error.unwrap();
    assert!(said.starts_with("The model gemma:2b cannot call tools, which an agent needs to work a task. Pick a larger model or one tuned for tool use."), "{said}");
    assert_eq!(
        super::super::classify::classify(&said),
        Some(ErrorCode::ModelToolUseUnsupported)
    );
    let (_, s) = parse(&[
        json!({ "type": "message_end", "message": failed("404 model \"x\" not found, try pulling it first") }),
    ]);
    assert_eq!(
        super::super::classify::classify(&s.error.unwrap()),
        Some(ErrorCode::ModelUnavailable)
    );

    // A retry that works clears the failure; one given up is the failure.
    let rate = failed("429 Rate limit reached. Please try again in 20m0s.");
    let ok = assistant(
        json!([{ "type": "text", "text": "ok" }]),
        "stop",
        zero.clone(),
    );
    let (_, s) = parse(&[
        json!({ "type": "message_end", "message": rate }),
        json!({ "type": "agent_end", "messages": [] }),
        json!({ "type": "auto_retry_start", "attempt": 1 }),
        json!({ "type": "message_end", "message": ok }),
        json!({ "type": "agent_end", "messages": [] }),
        json!({ "type": "auto_retry_end", "success": true }),
    ]);
    assert!(s.completed && s.error.is_none(), "{s:?}");
    let (_, s) = parse(&[
        json!({ "type": "message_end", "message": rate }),
        json!({ "type": "auto_retry_start", "attempt": 1 }),
        json!({ "type": "auto_retry_end", "success": false, "finalError": "429 Rate limit reached. Please try again in 20m0s." }),
    ]);
    assert_eq!(
        super::super::classify::classify(&s.error.unwrap()),
        Some(ErrorCode::RateLimited)
    );
    let (_, s) = parse(&[json!({ "type": "error", "error": { "message": "boom" } })]);
    assert_eq!(s.error.as_deref(), Some("boom"));
}

#[test]
fn zero_is_a_price_only_when_the_provider_declares_one() {
    let declared = json!({ "ollama": { "models": [{ "id": "qwen3:8b", "cost": { "input": 0, "output": 0 } }] } });
    let config = |providers: Option<Value>| {
        let mut c = json!({ "model": "ollama/qwen3:8b" });
        if let Some(p) = providers {
            c["env"] = json!({ "PAPERCLIP_PI_PROVIDERS": p.to_string() });
        }
        adapter().parse_config(&c).unwrap().0
    };
    let summary = || Summary {
        usage: crate::cli::stream::Usage {
            input_tokens: 5,
            cost_usd: Some(0.0),
            ..Default::default()
        },
        session_id: Some("/nonexistent/session.jsonl".into()),
        ..Summary::default()
    };
    let mut s = summary();
    Pi.complete(&mut s, &config(Some(declared)));
    assert_eq!(s.usage.cost_usd, Some(0.0));
    assert_eq!(s.model.as_deref(), Some("ollama/qwen3:8b"));
    assert_eq!(s.session_id, None, "no file, nothing to resume");
    let mut s = summary();
    Pi.complete(&mut s, &config(None));
    assert_eq!(s.usage.cost_usd, None, "unpriced, not free");
    assert_eq!(Pi.provider(Some("ollama/qwen3:8b")), "ollama");
    assert_eq!(Pi.provider(Some("my gw/x")), "pi");
    assert_eq!(Pi.provider(None), "pi");
}
