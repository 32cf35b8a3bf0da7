//! Confinement (issue 36, the agent-runs spec's `filesystemScope` /
//! `networkScope`): a `process` agent that asks for it runs under
//! bubblewrap. It writes its working directory and nothing else; it reaches
//! the API (direct and through the proxy, as the run, never as the board)
//! but not a host off its allow-list; and each refusal is in its run's
//! error and log. Config values are validated like every adapterConfig key.

use crate::common;

use crate::common::repos::git;
use common::TestServer;
use paperclip_scripted_provider::{ScriptedProvider, Turn};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// Whether bwrap is installed; `.ci/run` installs it, so under CI
/// (`PAPERCLIP_REQUIRE_AGENT_CLIS=1`) a missing one is a failure.
fn bwrap_installed() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("bwrap").is_file()));
    if !found {
        if std::env::var("PAPERCLIP_REQUIRE_AGENT_CLIS").as_deref() == Ok("1") {
            panic!("`bwrap` is not on PATH (apt-get install bubblewrap)");
        }
        eprintln!("skipping: `bwrap` is not installed (apt-get install bubblewrap)");
    }
    found
}

/// A company with one `process` agent running `script` with `extra`
/// config merged in; the script itself is shown read-only to the sandbox.
async fn agent(s: &TestServer, script: &str, extra: Value) -> (String, String) {
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    let path = s.data_dir.join("agent.sh");
    std::fs::write(&path, script).unwrap();
    let path = path.display().to_string();
    let mut config = json!({ "command": "sh", "args": [path], "graceSec": 2,
        "filesystemScope": "workspace", "filesystemExtraPaths": [path] });
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    let created = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Boxed", "adapterType": "process", "adapterConfig": config }),
        )
        .await;
    (cid, created["id"].as_str().unwrap().to_string())
}

/// Wakes the agent and returns its run once it has ended.
async fn run_once(s: &TestServer, aid: &str) -> Value {
    let run = s.wake(aid, json!({})).await;
    let path = format!("/api/heartbeat-runs/{}", run["id"].as_str().unwrap());
    s.wait_for(&path, 60, |r| {
        r["status"] != "queued" && r["status"] != "running"
    })
    .await
}

/// The run log's text (every stream, in order).
async fn log_text(s: &TestServer, run_id: &str) -> String {
    let page = s.ok_get(&format!("/api/heartbeat-runs/{run_id}/log")).await;
    page["content"]
        .as_str()
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| e["chunk"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn a_confined_agent_writes_its_working_directory_and_nothing_outside() {
    if !bwrap_installed() {
        return;
    }
    let s = TestServer::start().await;
    let outside = s.data_dir.join("escaped.txt");
    let home_file = format!("paperclip-confinement-{}", uuid::Uuid::new_v4().simple());
    let script = r#"set -e
echo inside > inside.txt
curl -sSf -o /dev/null -H "Authorization: Bearer $PAPERCLIP_API_KEY" "$PAPERCLIP_API_URL/api/agents/me"
echo api-ok >> inside.txt
echo scratch > "/tmp/$HOME_FILE" && echo tmp-ok >> inside.txt
if echo escaped > "$HOME/$HOME_FILE" 2>/dev/null; then echo home-written >> inside.txt; fi
echo escaped > "$OUTSIDE"
echo not-reached >> inside.txt
"#;
    let (_, aid) = agent(
        &s,
        script,
        json!({ "env": { "OUTSIDE": outside.display().to_string(), "HOME_FILE": home_file } }),
    )
    .await;
    let run = run_once(&s, &aid).await;

    assert_eq!(run["status"], "failed", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(error.contains("Read-only file system"), "{error}");
    assert!(error.contains("confined: writes only in"), "{error}");
    assert!(!outside.exists(), "the write outside landed on the host");
    let home = std::env::var("HOME").unwrap();
    assert!(!std::path::Path::new(&home).join(&home_file).exists());
    let workspace = s.data_dir.join("workspaces").join(&aid);
    let inside = std::fs::read_to_string(workspace.join("inside.txt")).unwrap();
    assert_eq!(inside, "inside\napi-ok\ntmp-ok\n", "{inside}");
    // The private /tmp was the sandbox's, not the host's.
    assert!(!std::path::Path::new("/tmp").join(&home_file).exists());

    let log = log_text(&s, run["id"].as_str().unwrap()).await;
    assert!(
        log.contains("confined with bubblewrap: writes only in"),
        "{log}"
    );
    let events = s
        .ok_get(&format!(
            "/api/heartbeat-runs/{}/events",
            run["id"].as_str().unwrap()
        ))
        .await;
    assert!(events.to_string().contains("adapter.confine"), "{events}");
}

#[tokio::test]
async fn a_confined_agent_reaches_the_api_as_itself_but_no_host_off_its_allow_list() {
    if !bwrap_installed() {
        return;
    }
    let s = TestServer::start().await;
    // Each line of result.txt is one check the agent made from inside.
    let script = r#"set -u
out=result.txt
auth="Authorization: Bearer $PAPERCLIP_API_KEY"
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
echo "api-direct $(code -H "$auth" "$PAPERCLIP_API_URL/api/agents/me")" >> $out
echo "api-proxied $(code --noproxy '' -x "$http_proxy" -H "$auth" "$PAPERCLIP_API_URL/api/agents/me")" >> $out
echo "keyless-direct $(code "$PAPERCLIP_API_URL/api/companies")" >> $out
echo "keyless-proxied $(code --noproxy '' -x "$http_proxy" "$PAPERCLIP_API_URL/api/companies")" >> $out
echo "plain-http-blocked $(code http://blocked.example.com/)" >> $out
if curl -s --noproxy '*' --max-time 5 -o /dev/null http://192.0.2.1/; then echo "direct-open" >> $out; else echo "direct-closed" >> $out; fi
curl -sSf -o /dev/null https://blocked.example.com/ || exit $?
echo not-reached >> $out
"#;
    let (_, aid) = agent(
        &s,
        script,
        json!({ "networkScope": "allowlist", "networkAllowlist": ["allowed.example.com:443"] }),
    )
    .await;
    let run = run_once(&s, &aid).await;
    let workspace = s.data_dir.join("workspaces").join(&aid);
    let result = std::fs::read_to_string(workspace.join("result.txt")).unwrap_or_default();
    assert_eq!(
        result,
        "api-direct 200\napi-proxied 200\nkeyless-direct 401\nkeyless-proxied 401\n\
         plain-http-blocked 403\ndirect-closed\n",
        "{run}"
    );

    assert_eq!(run["status"], "failed", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(
        error.contains(
            "blocked by the network allow-list: blocked.example.com:80, blocked.example.com:443"
        ),
        "{error}"
    );
    let run_id = run["id"].as_str().unwrap();
    let log = log_text(&s, run_id).await;
    assert!(
        log.contains(
            "blocked network access to blocked.example.com:443: not on this run's allow-list"
        ),
        "{log}"
    );
    assert!(
        log.contains("allowed.example.com:443"),
        "the allow-list is logged: {log}"
    );
    let events = s
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/events"))
        .await;
    assert!(
        events.to_string().contains("adapter.confine.blocked"),
        "{events}"
    );
}

#[tokio::test]
async fn confinement_that_cannot_be_had_fails_the_run_instead_of_running_unconfined() {
    let s = TestServer::start_env(&[("PAPERCLIP_BWRAP", "/nonexistent/bwrap")]).await;
    let marker = s.data_dir.join("ran.txt");
    let (_, aid) = agent(
        &s,
        &format!("touch {}\n", marker.display()),
        json!({ "networkScope": "deny" }),
    )
    .await;
    let run = run_once(&s, &aid).await;
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["errorCode"], "adapter_not_installed", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(
        error.contains("bubblewrap") && error.contains("apt-get install bubblewrap"),
        "{error}"
    );
    assert!(!marker.exists(), "the agent ran unconfined");
}

#[tokio::test]
async fn confinement_settings_are_checked_and_every_bad_value_named() {
    let s = TestServer::start().await;
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    let agents = format!("/api/companies/{cid}/agents");
    let create = |kind: &str, config: Value| {
        let body = json!({ "name": "Boxed", "adapterType": kind, "adapterConfig": config });
        s.post(&agents, body)
    };
    let detail_paths = |body: &Value| -> Vec<Value> {
        body["details"]
            .as_array()
            .unwrap_or_else(|| panic!("no details: {body}"))
            .iter()
            .map(|d| d["path"].clone())
            .collect()
    };

    let (status, body) = create(
        "process",
        json!({ "command": "true",
            "filesystemScope": "host",
            "filesystemExtraPaths": ["relative", { "path": "/opt/x", "access": "write" }],
            "networkScope": "open",
            "networkAllowlist": ["*.anthropic.com", "https://api.openai.com"] }),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(
        detail_paths(&body),
        [
            json!(["adapterConfig", "filesystemScope"]),
            json!(["adapterConfig", "filesystemExtraPaths", "0"]),
            json!(["adapterConfig", "filesystemExtraPaths", "1", "access"]),
            json!(["adapterConfig", "networkAllowlist", "0"]),
            json!(["adapterConfig", "networkAllowlist", "1"]),
            json!(["adapterConfig", "networkScope"]),
        ],
        "{body}"
    );
    assert!(
        body.to_string().contains("wildcards are not supported"),
        "{body}"
    );

    // A list that no scope enforces would only look like a restriction.
    let (status, body) = create(
        "claude_local",
        json!({ "networkAllowlist": ["api.anthropic.com"] }),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(
        detail_paths(&body),
        [json!(["adapterConfig", "networkAllowlist"])]
    );

    // An HTTP agent does not run here: nothing could confine it.
    let (status, body) = create(
        "http",
        json!({ "url": "http://127.0.0.1:9/hook", "networkScope": "deny" }),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body.to_string()
            .contains("applies only to agents Paperclip runs as local processes"),
        "{body}"
    );

    // Nor does a Kubernetes Job's: its pod is its sandbox.
    let (status, body) = create("claude_k8s", json!({ "filesystemScope": "workspace" })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        detail_paths(&body).contains(&json!(["adapterConfig", "filesystemScope"])),
        "{body}"
    );

    // The seed's example is accepted as written, and read back.
    let seed = json!({ "command": "true", "filesystemScope": "workspace",
        "filesystemExtraPaths": ["/opt/toolchains", { "path": "/var/cache/pnpm", "access": "rw" }],
        "networkScope": "allowlist", "networkAllowlist": ["api.anthropic.com", "127.0.0.1:4100"] });
    let (status, agent) = create("codex_local", seed.clone()).await;
    assert!(status.is_success(), "{status} {agent}");
    assert_eq!(
        agent["adapterConfig"]["networkAllowlist"],
        seed["networkAllowlist"]
    );
    assert_eq!(
        agent["adapterConfig"]["filesystemExtraPaths"],
        seed["filesystemExtraPaths"]
    );
}

#[tokio::test]
async fn a_cancelled_confined_agent_gets_its_sigterm_and_grace() {
    if !bwrap_installed() {
        return;
    }
    let s = TestServer::start().await;
    // bwrap itself dies of SIGTERM and would take the sandbox with it; the
    // agent must be the one that hears the stop, and have time to act on it.
    let script = "trap 'sleep 0.3; echo got-term > term.txt; exit 0' TERM\n\
                  echo started > started.txt\n\
                  while :; do sleep 0.1; done\n";
    let (_, aid) = agent(
        &s,
        script,
        json!({ "graceSec": 10, "networkScope": "deny" }),
    )
    .await;
    let run = s.wake(&aid, json!({})).await;
    let run_id = run["id"].as_str().unwrap().to_string();
    let workspace = s.data_dir.join("workspaces").join(&aid);
    common::until(30, "the confined agent to start", async || {
        workspace.join("started.txt").exists().then_some(())
    })
    .await;
    s.ok_post(&format!("/api/heartbeat-runs/{run_id}/cancel"), json!({}))
        .await;
    let run = s
        .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 30, |r| {
            r["status"] != "queued" && r["status"] != "running"
        })
        .await;
    assert_eq!(run["status"], "cancelled", "{run}");
    let term = std::fs::read_to_string(workspace.join("term.txt")).unwrap_or_default();
    assert_eq!(
        term, "got-term\n",
        "the agent's TERM handler did not finish: {run}"
    );
    s.quiesce().await;
}

#[tokio::test]
async fn a_confined_agent_commits_in_its_worktree_but_cannot_touch_the_main_checkout() {
    if !bwrap_installed() {
        return;
    }
    let s = TestServer::start().await;
    let repo = std::env::temp_dir().join(format!("paperclip-repo-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&repo).unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["config", "user.email", "dev@example.com"],
        &["config", "user.name", "Dev"],
    ] {
        git(&repo, args);
    }
    std::fs::write(repo.join("README.md"), "hello\n").unwrap();
    git(&repo, &["add", "README.md"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    let repo = repo.canonicalize().unwrap();
    // The agent commits in its worktree, then tries the main checkout and
    // a hook git would run outside the sandbox; it says what it managed.
    let script = r#"echo change > confined.txt
git add confined.txt && git -c user.email=a@example.com -c user.name=Agent commit -q -m "confined commit" && echo committed
if echo scribble >> "$REPO/README.md" 2>/dev/null; then echo main-written; else echo main-protected; fi
if echo 'touch /tmp/pwned' > "$REPO/.git/hooks/post-checkout" 2>/dev/null; then echo hook-written; else echo hook-protected; fi
if git config core.hooksPath /tmp 2>/dev/null; then echo config-written; else echo config-protected; fi
"#;
    let (cid, aid) = agent(
        &s,
        script,
        json!({ "env": { "REPO": repo.display().to_string() } }),
    )
    .await;
    let project = s
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "App" }),
        )
        .await;
    let pid = project["id"].as_str().unwrap();
    s.ok_post(
        &format!("/api/projects/{pid}/workspaces"),
        json!({ "cwd": repo.to_str().unwrap() }),
    )
    .await;
    s.issue(
        &cid,
        json!({ "title": "Confined change", "status": "todo", "projectId": pid, "assigneeAgentId": aid }),
    )
    .await;
    let runs = s
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            60,
            |r| {
                r.as_array().is_some_and(|r| {
                    !r.is_empty()
                        && r.iter()
                            .all(|x| x["status"] != "queued" && x["status"] != "running")
                })
            },
        )
        .await;
    let run = &runs[0];
    assert_eq!(run["status"], "succeeded", "{run}");
    let log = log_text(&s, run["id"].as_str().unwrap()).await;
    for said in [
        "committed",
        "main-protected",
        "hook-protected",
        "config-protected",
    ] {
        assert!(log.contains(said), "{said} missing: {log}");
    }
    assert_eq!(
        std::fs::read_to_string(repo.join("README.md")).unwrap(),
        "hello\n"
    );
    assert!(!repo.join(".git/hooks/post-checkout").exists());
    let commits = git(&repo, &["log", "--all", "--format=%s"]);
    assert!(commits.contains("confined commit"), "{commits}");
    let _ = std::fs::remove_dir_all(&repo);
}

/// A real coding CLI, confined, against the scripted provider on loopback
/// (mirrored into the sandbox): it works its task through the API, its
/// shell writes its working directory, and the same shell's write outside
/// and request off the allow-list fail.
async fn a_confined_cli_works_its_task_but_cannot_write_outside_or_reach_off_list(
    kind: &'static str,
) {
    if !bwrap_installed() {
        return;
    }
    let Some(cli) = crate::clis::Cli::find(kind) else {
        return;
    };
    let auth = r#"-H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'Content-Type: application/json'"#;
    let api = r#""$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID"#;
    let turns = vec![
        Turn::Bash {
            command: format!(
                r#"curl -sSf -X POST {api}/checkout" {auth} -d "{{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\"]}}""#
            ),
        },
        Turn::Bash {
            command: r#"echo made > made-by-agent.txt; (echo x > "$OUTSIDE") 2>&1; curl -sS -o /dev/null -w 'status %{http_code}\n' http://blocked.example.com/; true"#.into(),
        },
        Turn::Bash {
            command: format!(r#"curl -sSf -X PATCH {api}" {auth} -d '{{"status":"done"}}'"#),
        },
        Turn::Answer {
            text: "Done, within the sandbox.".into(),
        },
    ];
    let provider = ScriptedProvider::start(turns).await;
    let s = TestServer::start().await;
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    let outside = s.data_dir.join("claude-escaped.txt");
    let mut config = cli.config(&provider);
    config["env"]["OUTSIDE"] = json!(outside.display().to_string());
    config["filesystemScope"] = json!("workspace");
    config["networkScope"] = json!("allowlist");
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Coder", "adapterType": kind, "adapterConfig": config }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let issue = s
        .issue(
            &cid,
            json!({ "title": "Work boxed in", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let runs = s
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            180,
            |r| {
                r.as_array().is_some_and(|r| {
                    !r.is_empty()
                        && r.iter()
                            .all(|x| x["status"] != "queued" && x["status"] != "running")
                })
            },
        )
        .await;
    let run = &runs[0];
    let run_id = run["id"].as_str().unwrap();
    let log = log_text(&s, run_id).await;
    assert_eq!(run["status"], "succeeded", "{run}\n{log}");
    let issue = s
        .ok_get(&format!("/api/issues/{}", issue["id"].as_str().unwrap()))
        .await;
    assert_eq!(issue["status"], "done", "{issue}");
    let made = s
        .data_dir
        .join("workspaces")
        .join(&aid)
        .join("made-by-agent.txt");
    assert_eq!(
        std::fs::read_to_string(&made).unwrap_or_default(),
        "made\n",
        "{log}"
    );
    assert!(
        !outside.exists(),
        "{kind}'s shell wrote outside its sandbox"
    );
    let events = s
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/events?limit=1000"))
        .await
        .to_string();
    assert!(events.contains("Read-only file system"), "{events}");
    assert!(events.contains("status 403"), "{events}");
    assert!(events.contains("adapter.confine.blocked"), "{events}");
}

#[tokio::test]
async fn confined_claude_works_within_its_sandbox() {
    a_confined_cli_works_its_task_but_cannot_write_outside_or_reach_off_list("claude_local").await;
}

#[tokio::test]
async fn confined_codex_works_within_its_sandbox() {
    a_confined_cli_works_its_task_but_cannot_write_outside_or_reach_off_list("codex_local").await;
}

#[tokio::test]
async fn confined_opencode_works_within_its_sandbox() {
    a_confined_cli_works_its_task_but_cannot_write_outside_or_reach_off_list("opencode_local")
        .await;
}
