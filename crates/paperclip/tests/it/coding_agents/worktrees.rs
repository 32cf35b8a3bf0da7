//! The real `claude`, `codex` and `opencode` CLIs, pointed at the scripted
//! provider as in `coding_agents.rs`, working a task of a project that
//! declares a git repository: the CLI's own shell tool edits a committed
//! file and adds one, and both land in the task's worktree, never in the
//! main checkout, and the run's recorded changes name them with their line
//! counts. Without a CLI on PATH the test is skipped (see `clis.rs`).

use crate::clis::Cli;
use crate::common;

use std::path::PathBuf;

use crate::common::repos::{commit_file, git, repository, str_of as s};
use common::TestServer;
use paperclip_scripted_provider::{ScriptedProvider, Turn};
use serde_json::json;

const README: &str = "# App\nhello world\nbye\n";

/// The CLI edits one line of the committed README (+1 −1) and writes a new
/// three-line file (+3), from its working directory, which it prints first.
fn edit_turns(kind: &str) -> Vec<Turn> {
    vec![
        Turn::Bash {
            command: format!(
                "pwd && sed -i 's/^hello world$/hello from {kind}/' README.md \
                 && printf 'one\\ntwo\\nthree\\n' > NOTES.md && echo edited"
            ),
        },
        Turn::Answer {
            text: "Edited the README and added the notes.".into(),
        },
    ]
}

async fn edits_a_file_in_its_task_worktree(kind: &'static str) {
    let Some(cli) = Cli::find(kind) else { return };
    let provider = ScriptedProvider::start(edit_turns(kind)).await;
    let server = TestServer::start().await;
    let cid = s(&server.company("Acme").await["id"]).to_string();
    let repo = repository();
    commit_file(&repo, "README.md", README);
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "App" }),
        )
        .await;
    let pid = s(&project["id"]).to_string();
    server
        .ok_post(
            &format!("/api/projects/{pid}/workspaces"),
            json!({ "cwd": repo.to_str().unwrap() }),
        )
        .await;
    // The agent's own config points at the main checkout: isolation is not
    // the agent's choice, so the run must still work in the worktree.
    let mut config = cli.config(&provider);
    config["cwd"] = json!(repo.to_str().unwrap());
    let agent = server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Coder", "role": "engineer", "adapterType": kind, "adapterConfig": config }),
        )
        .await;
    let aid = s(&agent["id"]).to_string();
    let issue = server
        .issue(
            &cid,
            json!({ "title": "Greet from the worktree", "status": "todo",
                    "projectId": pid, "assigneeAgentId": aid }),
        )
        .await;
    let tid = s(&issue["id"]).to_string();
    let runs = server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            180,
            |r| {
                r.as_array().is_some_and(|r| {
                    !r.is_empty()
                        && r.iter()
                            .all(|run| run["status"] != "queued" && run["status"] != "running")
                })
            },
        )
        .await;
    let run = &runs[0];
    assert_eq!(run["status"], "succeeded", "{run}");
    let run_id = s(&run["id"]).to_string();

    let workspaces = server
        .ok_get(&format!(
            "/api/companies/{cid}/execution-workspaces?issueId={tid}"
        ))
        .await;
    assert_eq!(workspaces.as_array().unwrap().len(), 1, "{workspaces}");
    let dir = PathBuf::from(s(&workspaces[0]["cwd"]));
    assert!(
        !dir.starts_with(&repo),
        "the worktree is inside the repository"
    );

    // The CLI's shell tool made the edit, and ran there: the result's
    // first line (what an event keeps) is its `pwd`.
    let events = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/events?limit=1000"))
        .await;
    let of = |kind: &str| -> Vec<String> {
        events
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["eventType"] == kind)
            .map(|e| e["message"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let calls = of("transcript.tool_call");
    assert!(
        calls.iter().any(|m| m.contains("NOTES.md")),
        "no edit among the tool calls {calls:?}"
    );
    let results = of("transcript.tool_result");
    assert!(
        results.iter().any(|m| m.contains(dir.to_str().unwrap())),
        "no tool result from {} in {results:?}",
        dir.display()
    );

    // The edit is in the worktree, and only there.
    let edited = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert_eq!(edited, format!("# App\nhello from {kind}\nbye\n"));
    assert_eq!(
        std::fs::read_to_string(dir.join("NOTES.md")).unwrap(),
        "one\ntwo\nthree\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("README.md")).unwrap(),
        README
    );
    assert!(
        !repo.join("NOTES.md").exists(),
        "the main checkout got the new file"
    );
    assert_eq!(
        git(&repo, &["status", "--porcelain"]),
        "",
        "the main checkout is untouched"
    );
    assert_eq!(
        git(&repo, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );

    // What the run changed, as recorded: both files, with their counts,
    // and nothing of the CLI's own state.
    let changes = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/workspace-changes"))
        .await;
    assert_eq!(changes["runId"], run_id.as_str());
    assert_eq!(changes["executionWorkspaceId"], workspaces[0]["id"]);
    assert_eq!(changes["issueId"], tid.as_str());
    let files = changes["files"].as_array().unwrap();
    let file = |path: &str| {
        files
            .iter()
            .find(|f| f["path"] == path)
            .unwrap_or_else(|| panic!("{path} is not among the changes: {changes}"))
    };
    let readme = file("README.md");
    assert_eq!(readme["kind"], "modified", "{readme}");
    assert_eq!(
        (&readme["insertions"], &readme["deletions"]),
        (&json!(1), &json!(1))
    );
    let notes = file("NOTES.md");
    assert_eq!(notes["kind"], "added", "{notes}");
    assert_eq!(
        (&notes["insertions"], &notes["deletions"]),
        (&json!(3), &json!(0))
    );
    assert_eq!(changes["filesChanged"], 2, "{changes}");
    assert_eq!(changes["insertions"], 4, "{changes}");
    assert_eq!(changes["deletions"], 1, "{changes}");
    let patch = s(&changes["patch"]);
    assert!(
        patch.contains("-hello world") && patch.contains(&format!("+hello from {kind}")),
        "{patch}"
    );
    assert_eq!(changes["truncated"], false);
    let listed = server
        .ok_get(&format!(
            "/api/execution-workspaces/{}/changes",
            s(&workspaces[0]["id"])
        ))
        .await;
    assert_eq!(listed[0]["runId"], run_id.as_str(), "{listed}");
    // The task's Changes view shows the edit to a person.
    let identifier = s(&issue["identifier"]);
    let prefix = identifier.split('-').next().unwrap();
    let page = server.page(&format!("/{prefix}/tasks/{identifier}")).await;
    assert!(
        page.contains("changed 2 files, +4 \u{2212}1"),
        "no summary on the task page"
    );
    assert!(page.contains("NOTES.md") && page.contains(&format!("+hello from {kind}")));
    let _ = std::fs::remove_dir_all(&repo);
}

macro_rules! worktree_tests {
    ($module:ident, $kind:literal) => {
        mod $module {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn edits_a_file_in_its_task_worktree() {
                super::edits_a_file_in_its_task_worktree($kind).await;
            }
        }
    };
}

worktree_tests!(claude, "claude_local");
worktree_tests!(codex, "codex_local");
worktree_tests!(opencode, "opencode_local");
