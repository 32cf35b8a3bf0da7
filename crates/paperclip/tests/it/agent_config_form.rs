//! The agent page edits an agent's configuration with the hire form's
//! per-adapter fields: they come filled from the stored config (secrets only
//! as their placeholder), and a save as the form sends it keeps every key the
//! fields do not show, and the stored secrets.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

/// The opening tag (an input) or the element up to its end tag (textarea,
/// select) whose id is `id`.
fn element<'a>(page: &'a str, id: &str) -> &'a str {
    let at = page
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no element #{id} on the page"));
    let start = page[..at].rfind('<').unwrap();
    let rest = &page[start..];
    let end = if rest.starts_with("<input") {
        rest.find('>').unwrap() + 1
    } else {
        let tag = if rest.starts_with("<select") {
            "</select>"
        } else {
            "</textarea>"
        };
        rest.find(tag).unwrap() + tag.len()
    };
    &rest[..end]
}

fn textarea_text(el: &str) -> String {
    let open = el.find('>').unwrap() + 1;
    unescape(&el[open..el.len() - "</textarea>".len()])
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The opening tag of one adapter type's fieldset.
fn fieldset<'a>(page: &'a str, kind: &str) -> &'a str {
    let marker = format!("data-adapter=\"{kind}\"");
    let at = page.find(&marker).expect("fieldset");
    let start = page[..at].rfind('<').unwrap();
    let end = page[start..].find('>').unwrap();
    &page[start..=start + end]
}

async fn setup(s: &TestServer) -> (String, String) {
    let company = s.company("Form Co").await;
    (
        company["id"].as_str().unwrap().to_string(),
        company["issuePrefix"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn the_agent_page_shows_the_adapter_fields_filled_from_the_config() {
    let s = TestServer::start().await;
    let (cid, prefix) = setup(&s).await;
    let secret = "sk-live-do-not-show-8812";
    let process = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Runner", "adapterType": "process", "adapterConfig": {
                "command": "/usr/local/bin/my-agent",
                "args": ["--fast", "-v"],
                "timeoutSec": 300,
                "env": { "REGION": "eu", "OPENAI_API_KEY": secret },
                "promptTemplate": "Work on {{task.identifier}}",
                "bootstrapPromptTemplate": "First run",
            } }),
        )
        .await;
    let page = s
        .page(&format!(
            "/{prefix}/agents/{}",
            process["urlKey"].as_str().unwrap()
        ))
        .await;
    assert!(!page.contains(secret), "the page shows a secret");
    let command = element(&page, "cfg-process-command");
    assert!(
        command.contains("value=\"/usr/local/bin/my-agent\""),
        "{command}"
    );
    assert_eq!(
        textarea_text(element(&page, "cfg-process-args")),
        "--fast\n-v"
    );
    assert!(element(&page, "cfg-process-timeoutSec").contains("value=\"300\""));
    assert_eq!(
        textarea_text(element(&page, "cfg-process-env")),
        "OPENAI_API_KEY=[REDACTED]\nREGION=eu"
    );
    // The template has its own editor; the JSON view carries the rest,
    // keys without a field too.
    assert!(!page.contains("id=\"cfg-process-promptTemplate\""));
    let json_view = page.find("data-hire-json").expect("JSON view");
    let json_view = &page[page[..json_view].rfind('<').unwrap()..];
    let json_view: Value = serde_json::from_str(&textarea_text(
        &json_view[..json_view.find("</textarea>").unwrap() + 11],
    ))
    .unwrap();
    assert_eq!(json_view["bootstrapPromptTemplate"], "First run");
    assert!(json_view.get("promptTemplate").is_none());
    // Only the agent's own type is shown, and it is the one selected.
    assert!(!fieldset(&page, "process").contains(" hidden"));
    assert!(fieldset(&page, "claude_local").contains(" hidden"));
    assert!(page.contains("<option value=\"process\" selected>"));
    assert!(page.contains("data-hire-check"));

    let claude = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Coder", "adapterType": "claude_local", "adapterConfig": {
                "cwd": "/tmp",
                "model": "claude-sonnet-4-5",
                "effort": "high",
                "dangerouslySkipPermissions": true,
                "maxTurnsPerRun": 12,
            } }),
        )
        .await;
    let page = s
        .page(&format!(
            "/{prefix}/agents/{}",
            claude["urlKey"].as_str().unwrap()
        ))
        .await;
    assert!(element(&page, "cfg-claude_local-cwd").contains("value=\"/tmp\""));
    assert!(element(&page, "cfg-claude_local-model").contains("value=\"claude-sonnet-4-5\""));
    assert!(element(&page, "cfg-claude_local-effort").contains("<option value=\"high\" selected>"));
    assert!(element(&page, "cfg-claude_local-dangerouslySkipPermissions").contains("checked"));
    assert!(element(&page, "cfg-claude_local-maxTurnsPerRun").contains("value=\"12\""));
    // Fields the config does not set stay empty.
    assert!(element(&page, "cfg-claude_local-command").contains("value=\"\""));
    assert!(!fieldset(&page, "claude_local").contains(" hidden"));
    assert!(fieldset(&page, "process").contains(" hidden"));
}

#[tokio::test]
async fn a_save_as_the_form_sends_it_keeps_keys_without_fields_and_secrets() {
    let s = TestServer::start().await;
    let (cid, prefix) = setup(&s).await;
    let out = std::env::temp_dir().join(format!("pc-seen-{}", uuid::Uuid::new_v4()));
    let secret = "sk-kept-secret-4471";
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Keeper", "adapterType": "process", "adapterConfig": {
                "command": "false",
                "args": ["-c", format!("printf %s \"$MY_API_KEY\" > {}", out.display())],
                "env": { "MY_API_KEY": secret },
                "paperclipSkillSync": { "desiredSkills": ["review"] },
                "promptTemplate": "Old {{task.identifier}}",
            } }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let page = s
        .page(&format!(
            "/{prefix}/agents/{}",
            agent["urlKey"].as_str().unwrap()
        ))
        .await;

    // The form's JSON view is what it sends, with the command field changed.
    let at = page.find("data-hire-json").unwrap();
    let area = &page[page[..at].rfind('<').unwrap()..];
    let area = &area[..area.find("</textarea>").unwrap() + 11];
    let mut config: Value = serde_json::from_str(&textarea_text(area)).unwrap();
    assert_eq!(config["env"]["MY_API_KEY"], "[REDACTED]");
    config["command"] = json!("sh");
    config["promptTemplate"] = json!("New {{task.identifier}}");
    let saved = s
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "adapterType": "process", "adapterConfig": config, "replaceAdapterConfig": true,
                "runtimeConfig": { "heartbeat": { "enabled": false, "intervalSec": 0,
                    "wakeOnAssignment": true, "wakeOnOnDemand": true, "wakeOnAutomation": true,
                    "wakeWhenIdle": false, "maxConcurrentRuns": 1 } } }),
        )
        .await;
    let stored = &saved["adapterConfig"];
    assert_eq!(stored["command"], "sh");
    assert_eq!(
        stored["paperclipSkillSync"],
        json!({ "desiredSkills": ["review"] })
    );
    assert_eq!(stored["promptTemplate"], "New {{task.identifier}}");
    assert_eq!(stored["env"]["MY_API_KEY"], "[REDACTED]");

    // The run gets the stored secret, not the placeholder the page showed.
    let (status, body) = s
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    assert!(status.is_success(), "wakeup: {status} {body}");
    let seen = common::until(30, "the run to write the key", async || {
        std::fs::read_to_string(&out).ok().filter(|t| !t.is_empty())
    })
    .await;
    assert_eq!(seen, secret);
}

/// `tests/browser/agent_config.mjs`: a person changes an agent's command
/// through its field, sees a failing environment check, saves anyway, and
/// the change is stored with the keys no field shows.
#[tokio::test(flavor = "multi_thread")]
async fn a_person_edits_an_agents_config_through_the_fields() {
    if !common::browser::ready() {
        return;
    }
    let s = TestServer::start().await;
    let (cid, _) = setup(&s).await;
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Builder", "adapterType": "process", "adapterConfig": {
                "command": "true", "bootstrapPromptTemplate": "keep-me",
            } }),
        )
        .await;
    common::browser::run("agent_config", &s.base, std::time::Duration::from_secs(120)).await;
    let after = s
        .ok_get(&format!("/api/agents/{}", agent["id"].as_str().unwrap()))
        .await;
    assert_eq!(after["adapterConfig"]["command"], "no-such-agent-cli-xyz");
    assert_eq!(after["adapterConfig"]["bootstrapPromptTemplate"], "keep-me");
}
