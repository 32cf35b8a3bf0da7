//! A worker agent on one task, for the tests of what becomes of a task when
//! its run ends (follow-ups, a graceful shutdown): a folder whose `mode` file
//! the agent's script reads, a company, the agent, and a task assigned to it.
//!
//! The script appends a line per run to `runs.log` in the folder and, while
//! it hangs on the task, writes its run's id to `runs.log.hanging`.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::{until, TestServer};

/// How a worker's script starts: `set -e`, then for curl the run's headers
/// (`$H`, `$R`, `$J`) and its task's URL (`$T`).
pub const SCRIPT_START: &str = r#"set -e
H="Authorization: Bearer $PAPERCLIP_API_KEY"
R="X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID"
J="Content-Type: application/json"
T="$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID"
"#;

/// A script's line that checks the task out to its run.
pub const CHECKOUT: &str = r#"curl -sSf -X POST "$T/checkout" -H "$H" -H "$R" -H "$J" -d "{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\",\"in_progress\"]}" > /dev/null"#;

/// A script's command that marks the task done.
pub const MARK_DONE: &str =
    r#"curl -sSf -X PATCH "$T" -H "$H" -H "$R" -H "$J" -d '{"status":"done"}' > /dev/null"#;

pub struct Setup {
    pub cid: String,
    pub aid: String,
    pub task: String,
    pub dir: PathBuf,
}

impl Setup {
    /// What the script does on its next run (`hang`, `fail`, `done`, ...).
    pub fn mode(&self, mode: &str) {
        std::fs::write(self.dir.join("mode"), mode).unwrap();
    }

    /// The lines the script's runs wrote to `runs.log`, oldest first.
    pub fn log(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("runs.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// A company named `company`, an agent "Worker" running `script(folder)`
/// with `mode` to start in, and a task assigned to it (which wakes it).
pub async fn setup(
    server: &TestServer,
    company: &str,
    mode: &str,
    script: fn(&Path) -> String,
) -> Setup {
    let dir = server
        .data_dir
        .join(format!("w-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mode"), mode).unwrap();
    let cid = server.company(company).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server
        .script_agent(&cid, "Worker", &script(&dir), json!({}))
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let task = server
        .issue(
            &cid,
            json!({ "title": "Ship it", "status": "todo", "assigneeAgentId": aid }),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    Setup {
        cid,
        aid,
        task,
        dir,
    }
}

/// Waits for the run that is hanging on the task (its process started and
/// the checkout made), other than those in `not`, and returns its id.
pub async fn hanging_run(server: &TestServer, s: &Setup, not: &[String]) -> String {
    until(20, "a run hanging on the task", async || {
        let id = std::fs::read_to_string(s.dir.join("runs.log.hanging")).ok()?;
        let id = id.trim().to_string();
        if not.contains(&id) {
            return None;
        }
        let issue = server.ok_get(&format!("/api/issues/{}", s.task)).await;
        (issue["checkoutRunId"] == id.as_str()).then_some(id)
    })
    .await
}
