//! Interactions tests' shared setup: an agent with a task and an ended run
//! whose id (with its key) lets a test speak as the agent.

use serde_json::{json, Value};

use super::TestServer;

pub fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// An agent whose runs do nothing, with a task assigned and its first run
/// over: the agent's key and that run's id let a test speak as the agent.
pub struct Asker {
    pub cid: String,
    pub agent: String,
    pub issue: String,
    pub key: String,
    pub run: String,
}

pub async fn asker(server: &TestServer, company: &str) -> Asker {
    let cid = id(&server.company(company).await);
    let agent = id(&server.agent(&cid, "Asker", None).await);
    let issue = server
        .issue(
            &cid,
            json!({ "title": "Pick a database", "status": "todo", "assigneeAgentId": agent }),
        )
        .await;
    let runs = server.only_run_succeeded(&cid, &agent).await;
    let key = server.key(&agent).await;
    Asker {
        run: id(&runs[0]),
        issue: id(&issue),
        cid,
        agent,
        key,
    }
}

impl Asker {
    pub async fn call(
        &self,
        server: &TestServer,
        method: &str,
        path: &str,
        body: Value,
    ) -> (reqwest::StatusCode, Value) {
        server
            .as_agent(&self.key, Some(&self.run), method, path, Some(body))
            .await
    }

    pub async fn ask(&self, server: &TestServer, body: Value) -> Value {
        let (status, card) = self
            .call(
                server,
                "POST",
                &format!("/api/issues/{}/interactions", self.issue),
                body,
            )
            .await;
        assert_eq!(status, 201, "{card}");
        card
    }
}

pub fn questions() -> Value {
    json!({ "kind": "ask_user_questions", "payload": { "title": "Storage", "questions": [
        { "id": "db", "prompt": "Which database?", "selectionMode": "single", "required": true,
          "options": [{ "id": "pg", "label": "Postgres" }, { "id": "lite", "label": "SQLite" }] },
        { "id": "notes", "prompt": "Anything else?", "selectionMode": "single",
          "options": [{ "id": "free", "label": "Tell us", "freeText": true }] } ] } })
}

pub async fn wakes(server: &TestServer, agent: &str) -> Vec<Value> {
    server
        .ok_get(&format!("/api/agents/{agent}/wakeup-requests?limit=100"))
        .await
        .as_array()
        .unwrap()
        .clone()
}
