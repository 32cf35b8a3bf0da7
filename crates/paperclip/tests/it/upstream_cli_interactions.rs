//! The upstream `paperclipai` CLI's interaction commands against this
//! binary: an agent (its key and run) creates cards with
//! `issue interaction:create`, the person lists, answers, accepts, rejects
//! and cancels them with the CLI; the effects are checked through our API.

use crate::common;

use common::upstream::{upstream_cli, Cli};
use common::TestServer;
use serde_json::{json, Value};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_upstream_cli_asks_and_answers_through_interactions() {
    let Some(path) = upstream_cli() else { return };
    let s = TestServer::start().await;
    let cli = Cli::new(path, &s);
    let cid = id(&s.company("Cli Cards").await);
    let agent = id(&s.agent(&cid, "Asker", None).await);
    let issue = id(&s
        .issue(
            &cid,
            json!({ "title": "Ask away", "status": "todo", "assigneeAgentId": agent }),
        )
        .await);
    let run = id(&s.only_run_succeeded(&cid, &agent).await[0]);
    let key = s.key(&agent).await;
    let as_agent = |args: &[&str]| {
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.extend([
            "--api-key".into(),
            key.clone(),
            "--run-id".into(),
            run.clone(),
            "--json".into(),
        ]);
        all
    };
    let create = |body: Value| {
        as_agent(&[
            "issue",
            "interaction:create",
            &issue,
            "--payload-json",
            &body.to_string(),
        ])
    };
    let run_args = |args: Vec<String>| {
        let cli = &cli;
        async move {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            cli.ok(&refs).await.json()
        }
    };

    // The agent asks a question; the person lists and answers it.
    let question = run_args(create(json!({ "kind": "ask_user_questions", "payload": { "version": 1, "questions": [
        { "id": "db", "prompt": "Which database?", "selectionMode": "single",
          "options": [{ "id": "pg", "label": "Postgres" }, { "id": "lite", "label": "SQLite" }] } ] } })))
    .await;
    assert_eq!(question["status"], "pending", "{question}");
    assert_eq!(question["createdByAgentId"], json!(agent));
    assert_eq!(question["sourceRunId"], json!(run));
    let listed = cli
        .ok(&["issue", "interactions", &issue, "--json"])
        .await
        .json();
    assert_eq!(listed[0]["id"], question["id"]);
    let answered = cli
        .ok(&[
            "issue",
            "interaction:respond",
            &issue,
            &id(&question),
            "--answers-json",
            r#"[{"questionId":"db","optionIds":["pg"]}]"#,
            "--summary-markdown",
            "Postgres, please",
            "--json",
        ])
        .await
        .json();
    assert_eq!(answered["status"], "answered", "{answered}");
    assert_eq!(answered["result"]["summaryMarkdown"], "Postgres, please");

    // A confirmation accepted, one rejected with a reason, a question cancelled.
    let confirm = |prompt: &str| {
        create(
            json!({ "kind": "request_confirmation", "continuationPolicy": "wake_assignee",
            "payload": { "version": 1, "prompt": prompt } }),
        )
    };
    let yes = run_args(confirm("Ship it?")).await;
    let accepted = cli
        .ok(&["issue", "interaction:accept", &issue, &id(&yes), "--json"])
        .await
        .json();
    assert_eq!(accepted["status"], "accepted", "{accepted}");
    let no = run_args(confirm("Delete the staging data?")).await;
    let rejected = cli
        .ok(&[
            "issue",
            "interaction:reject",
            &issue,
            &id(&no),
            "--reason",
            "Keep it for the audit",
            "--json",
        ])
        .await
        .json();
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(rejected["result"]["reason"], "Keep it for the audit");
    let later = run_args(create(
        json!({ "kind": "ask_user_questions", "payload": { "version": 1, "questions": [
        { "id": "when", "prompt": "When?", "selectionMode": "single",
          "options": [{ "id": "now", "label": "Now" }] } ] } }),
    ))
    .await;
    let cancelled = cli
        .ok(&[
            "issue",
            "interaction:cancel",
            &issue,
            &id(&later),
            "--reason",
            "Not needed",
            "--json",
        ])
        .await
        .json();
    assert_eq!(cancelled["status"], "cancelled");

    // Suggested tasks accepted by client key.
    let suggest = run_args(create(
        json!({ "kind": "suggest_tasks", "payload": { "version": 1, "tasks": [
        { "clientKey": "a", "title": "Write the migration" },
        { "clientKey": "b", "title": "Write the docs" } ] } }),
    ))
    .await;
    let made = cli
        .ok(&[
            "issue",
            "interaction:accept",
            &issue,
            &id(&suggest),
            "--selected-client-keys",
            "a",
            "--json",
        ])
        .await
        .json();
    let created = made["result"]["createdTasks"].as_array().unwrap();
    assert_eq!(created.len(), 1, "{made}");
    let task = s
        .ok_get(&format!(
            "/api/issues/{}",
            created[0]["identifier"].as_str().unwrap()
        ))
        .await;
    assert_eq!(task["title"], "Write the migration");

    // A resolved card stays resolved: the CLI fails with our 409.
    let again = cli
        .run(&["issue", "interaction:accept", &issue, &id(&yes), "--json"])
        .await;
    assert!(!again.ok, "{}", again.stdout);
    let cards = s.ok_get(&format!("/api/issues/{issue}/interactions")).await;
    let statuses: Vec<&str> = cards
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["answered", "accepted", "rejected", "cancelled", "accepted"]
    );
}
