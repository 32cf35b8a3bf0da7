//! Issue 40's first demonstration: an unchanged agent of the original. A
//! real `claude`, driven by the scripted provider, is given the original's
//! Paperclip skill verbatim as its instructions and makes the calls that
//! skill prescribes, with curl from its own shell tool, over two heartbeats:
//!
//! 1. identity, inbox, checkout, heartbeat context, its instructions bundle;
//!    a proposal for access to the company's deploy token; a company skill
//!    synced onto itself; a comment that it waits for access.
//! 2. (the board approved and commented) the granted secret's value, the
//!    synced skill among claude's skills, the board's inbox item archived, and
//!    the task done.
//!
//! Every answer's status is the one the original gives for that call, and
//! the keys the skill reads from each answer are there. Without `claude`
//! on PATH the test is skipped (see `coding_agents/clis.rs`).

use crate::clis::Cli;
use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::TestServer;
use paperclip_scripted_provider::{ScriptedProvider, Turn};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The original's skill, as its npm package ships it.
const UPSTREAM_SKILL: &str =
    "/opt/paperclip-ci/upstream-cli/node_modules/@paperclipai/server/skills/paperclip/SKILL.md";

/// A shell prelude: `call NAME METHOD PATH [BODY]` saves the answer's body
/// as `NAME.json` and its status as a `NAME=STATUS` line in `calls.txt`, in
/// the test's folder, sending the headers the skill says every call sends.
fn prelude(out: &Path) -> String {
    format!(
        r#"O={out}
call() {{ s=$(curl -sS -o "$O/$1.json" -w '%{{http_code}}' -X "$2" -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'Content-Type: application/json' "$PAPERCLIP_API_URL$3" ${{4:+-d "$4"}}); echo "$1=$s" >> "$O/calls.txt"; echo "$1=$s"; }}
"#,
        out = out.display()
    )
}

fn first_heartbeat(out: &Path) -> String {
    prelude(out)
        + r#"call me GET /api/agents/me
call inbox GET /api/agents/me/inbox-lite
call checkout POST "/api/issues/$PAPERCLIP_TASK_ID/checkout" "{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\",\"backlog\",\"blocked\"]}"
call context GET "/api/issues/$PAPERCLIP_TASK_ID/heartbeat-context"
call bundle GET "/api/agents/$PAPERCLIP_AGENT_ID/instructions-bundle"
call instructions GET "/api/agents/$PAPERCLIP_AGENT_ID/instructions-bundle/file?path=AGENTS.md"
call granted0 GET /api/agents/me/secrets
call propose POST /api/agents/me/secret-proposals "{\"kind\":\"binding\",\"secretId\":\"$(cat "$O/secret-id")\",\"configPath\":\"access.DEPLOY\",\"justification\":\"The release step pushes with it\"}"
call sync POST "/api/agents/$PAPERCLIP_AGENT_ID/skills/sync" '{"mode":"add","desiredSkills":["release-notes"]}'
call waiting POST "/api/issues/$PAPERCLIP_TASK_ID/comments" '{"body":"Asked the board for the deploy token; the release waits for it."}'
"#
}

fn second_heartbeat(out: &Path) -> String {
    prelude(out)
        + r#"call granted GET /api/agents/me/secrets
call value POST /api/agents/me/secrets/deploy-token/value '{}'
v=$(sed -n 's/.*"value":"\([^"]*\)".*/\1/p' "$O/value.json")
echo "sha=$(printf %s "$v" | sha256sum | cut -c1-64)" >> "$O/calls.txt"
: > "$O/value.json"
call done PATCH "/api/issues/$PAPERCLIP_TASK_ID" '{"status":"done","comment":"Released with the granted token."}'
call archive POST "/api/issues/$PAPERCLIP_TASK_ID/inbox-archive" '{}'
"#
}

/// The `NAME=STATUS` lines the heartbeats wrote.
fn statuses(out: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(out.join("calls.txt"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn answer(out: &Path, name: &str) -> Value {
    let text = std::fs::read_to_string(out.join(format!("{name}.json"))).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

async fn runs_ended(s: &TestServer, cid: &str, aid: &str, count: usize) -> Vec<Value> {
    let runs = s
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            240,
            |r| {
                r.as_array().is_some_and(|r| {
                    r.len() >= count
                        && r.iter()
                            .all(|run| run["status"] != "queued" && run["status"] != "running")
                })
            },
        )
        .await;
    runs.as_array().unwrap().clone()
}

#[tokio::test]
async fn an_unchanged_agent_of_the_original_does_its_heartbeats_here() {
    let Some(cli) = Cli::find("claude_local") else {
        return;
    };
    let Ok(skill) = std::fs::read_to_string(UPSTREAM_SKILL) else {
        assert!(
            std::env::var("PAPERCLIP_REQUIRE_UPSTREAM_CLI").as_deref() != Ok("1"),
            "the original's skill is not at {UPSTREAM_SKILL}"
        );
        eprintln!("skipping: the original's package is not installed");
        return;
    };
    let s = TestServer::start().await;
    let out = s.data_dir.join("agent-calls");
    std::fs::create_dir_all(&out).unwrap();
    let provider = ScriptedProvider::start(vec![
        Turn::Bash {
            command: first_heartbeat(out.as_path()),
        },
        Turn::Answer {
            text: "Waiting for the deploy token.".into(),
        },
        Turn::Bash {
            command: second_heartbeat(out.as_path()),
        },
        Turn::Answer {
            text: "Released.".into(),
        },
    ])
    .await;
    let company = s.company("Original Co").await;
    let cid = company["id"].as_str().unwrap().to_string();

    // The board's side: a secret, a company skill, and the agent whose
    // instructions are the original's skill, word for word.
    let token = format!("tok-{}", uuid::Uuid::new_v4().simple());
    let secret = s
        .ok_post(
            &format!("/api/companies/{cid}/secrets"),
            json!({ "name": "deploy/token", "key": "deploy-token", "value": token }),
        )
        .await;
    std::fs::write(
        out.as_path().join("secret-id"),
        secret["id"].as_str().unwrap(),
    )
    .unwrap();
    let skill_md = "---\nname: release-notes\ndescription: How this company writes release notes.\n---\n\nLead with what changed for the user.\n";
    let (status, made) = s
        .post(
            &format!("/api/companies/{cid}/skills"),
            json!({ "name": "Release notes", "slug": "release-notes", "markdown": skill_md }),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Releaser", "role": "engineer", "adapterType": "claude_local",
                    "adapterConfig": cli.config(&provider) }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let (status, put) = s
        .put(
            &format!("/api/agents/{aid}/instructions-bundle/file"),
            json!({ "path": "AGENTS.md", "content": skill }),
        )
        .await;
    assert_eq!(status, 200, "{put}");

    let issue = s
        .issue(
            &cid,
            json!({ "title": "Ship the release", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let tid = issue["id"].as_str().unwrap().to_string();
    let identifier = issue["identifier"].as_str().unwrap().to_string();
    let first = runs_ended(&s, &cid, &aid, 1).await;
    assert_eq!(first[0]["status"], "succeeded", "{}", first[0]);

    // What the original answers each call of the first heartbeat with.
    let got = statuses(out.as_path());
    for (call, want) in [
        ("me", "200"),
        ("inbox", "200"),
        ("checkout", "200"),
        ("context", "200"),
        ("bundle", "200"),
        ("instructions", "200"),
        ("granted0", "200"),
        ("propose", "201"),
        ("sync", "200"),
        ("waiting", "201"),
    ] {
        assert_eq!(
            got.get(call).map(String::as_str),
            Some(want),
            "{call}: {:?}",
            answer(out.as_path(), call)
        );
    }
    assert_eq!(answer(out.as_path(), "me")["id"], aid.as_str());
    assert!(
        answer(out.as_path(), "inbox")
            .as_array()
            .is_some_and(|l| l.iter().any(|i| i["identifier"] == identifier.as_str())),
        "the task is in its inbox"
    );
    assert_eq!(answer(out.as_path(), "checkout")["status"], "in_progress");
    assert_eq!(
        answer(out.as_path(), "context")["issue"]["identifier"],
        identifier.as_str()
    );
    let read = answer(out.as_path(), "instructions");
    assert_eq!(
        read["content"],
        skill.as_str(),
        "its instructions, verbatim"
    );
    assert_eq!(answer(out.as_path(), "granted0")["secrets"], json!([]));
    let proposal = answer(out.as_path(), "propose");
    assert_eq!(proposal["status"], "pending", "{proposal}");
    assert!(
        answer(out.as_path(), "sync")
            .to_string()
            .contains("release-notes"),
        "{}",
        answer(out.as_path(), "sync")
    );
    // The model was given the original's skill: a line of it is in the
    // first request claude sent.
    let marker: String = skill
        .lines()
        .find(|l| l.contains("inbox-archive") && !l.contains('"'))
        .expect("the skill names inbox-archive")
        .chars()
        .take(40)
        .collect();
    assert!(
        provider
            .requests()
            .iter()
            .any(|r| r.body.to_string().contains(&marker)),
        "the skill's text never reached the model"
    );

    // The board grants access and tells the agent, which wakes it.
    let pid = proposal["id"].as_str().unwrap();
    s.ok_post(
        &format!("/api/companies/{cid}/secret-proposals/{pid}/approve"),
        json!({}),
    )
    .await;
    s.ok_post(
        &format!("/api/issues/{tid}/comments"),
        json!({ "body": "Granted. Ship it." }),
    )
    .await;
    let runs = runs_ended(&s, &cid, &aid, 2).await;
    assert!(runs.iter().all(|r| r["status"] == "succeeded"), "{runs:?}");

    let got = statuses(out.as_path());
    for (call, want) in [
        ("granted", "200"),
        ("value", "200"),
        ("archive", "200"),
        ("done", "200"),
    ] {
        assert_eq!(
            got.get(call).map(String::as_str),
            Some(want),
            "{call}: {got:?}"
        );
    }
    let granted = answer(out.as_path(), "granted");
    assert_eq!(granted["secrets"][0]["key"], "deploy-token", "{granted}");
    let sha = hex::encode(Sha256::digest(token.as_bytes()));
    assert_eq!(got.get("sha"), Some(&sha), "the run read the granted value");
    // The synced skill reached claude's own skill list at the next run
    // start, and not before.
    let described = |turn: usize| {
        let requests = provider.requests();
        let scripted: Vec<_> = requests.iter().filter(|r| r.turn.is_some()).collect();
        scripted[turn]
            .body
            .to_string()
            .contains("How this company writes release notes.")
    };
    assert!(!described(0), "the skill was there before it was synced");
    assert!(described(2), "the synced skill is not in claude's skills");
    let archived = answer(out.as_path(), "archive");
    assert_eq!(archived["userId"], "local-board", "{archived}");
    assert_eq!(archived["archivedByActorType"], "agent");
    let task = s.ok_get(&format!("/api/issues/{tid}")).await;
    assert_eq!(task["status"], "done", "{task}");
    let prefix = company["issuePrefix"].as_str().unwrap();
    let inbox = s.page(&format!("/{prefix}/inbox")).await;
    assert!(
        !inbox.contains(&identifier),
        "{identifier} is still in the board's inbox"
    );

    // The value was read by the run and is nowhere the board looks.
    let mut places = vec![
        format!("/api/companies/{cid}/activity?limit=500"),
        format!("/api/issues/{tid}/comments"),
    ];
    for run in &runs {
        let id = run["id"].as_str().unwrap();
        places.push(format!("/api/heartbeat-runs/{id}/log"));
        places.push(format!("/api/heartbeat-runs/{id}/events?limit=1000"));
    }
    for path in places {
        let body = s.ok_get(&path).await.to_string();
        assert!(!body.contains(&token), "the token is in {path}");
    }
}
