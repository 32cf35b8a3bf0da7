//! A Kubernetes agent on a task of a project that declares a git
//! repository works in the task's worktree, through the shared volume: the
//! control plane's data dir is on the claim it mounts at `/paperclip`, the
//! Job mounts the same claim there, so the worktree the server made is the
//! Job's working directory at the same path, and what the CLI left in it is
//! committed and recorded as for a local run. A worktree a Job cannot reach
//! fails the run with what to change, before any Job is made.
//!
//! On this machine the host's own `/paperclip` plays the claim: the server
//! (the control plane's pod) and the fake kubelet (the Job's pod) both see
//! it there. Each test works in a directory of its own under it.

use crate::clis;
use crate::fake;
use crate::setup;

use std::path::{Path, PathBuf};

use fake::{LocalKubelet, Script};
use paperclip_scripted_provider::{ScriptedProvider, Turn};
use serde_json::json;
use setup::{setup_kind, setup_on, Setup};

use crate::common::repos::{commit_file, git, repository_in, str_of as s};

const README: &str = "# App\nhello world\nbye\n";
const VOLUME: &str = "/paperclip";

/// This test's part of the shared volume, removed when it ends.
struct OnVolume(PathBuf);

impl OnVolume {
    fn new() -> OnVolume {
        let dir = Path::new(VOLUME).join(format!("it-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| {
            panic!(
                "cannot make {} ({e}): these tests need a writable {VOLUME}, the shared \
                 volume's path (CI runs them as root)",
                dir.display()
            )
        });
        OnVolume(dir)
    }
}

impl Drop for OnVolume {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A project of the setup's company declaring `repo`, and a task of it
/// assigned to the setup's agent: the task's id.
async fn task_on_repository(t: &Setup, repo: &Path) -> String {
    let project =
        t.s.ok_post(
            &format!("/api/companies/{}/projects", t.cid),
            json!({ "name": "App" }),
        )
        .await;
    let pid = s(&project["id"]);
    t.s.ok_post(
        &format!("/api/projects/{pid}/workspaces"),
        json!({ "cwd": repo.to_str().unwrap() }),
    )
    .await;
    let issue =
        t.s.issue(
            &t.cid,
            json!({ "title": "Greet from the pod", "status": "todo",
                    "projectId": pid, "assigneeAgentId": t.aid }),
        )
        .await;
    s(&issue["id"]).to_string()
}

/// The real Claude Code in the Job's pod (the fake kubelet runs its command
/// line and env here) against the scripted provider: its shell tool prints
/// its directory, edits the committed README and adds a file. The Job's
/// working directory and workspace variables are the task's worktree, the
/// CLI ran there, the main checkout is untouched, and the run's recorded
/// changes name both files. Skipped without `claude` (required in CI).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_k8s_job_works_in_its_task_worktree_on_the_shared_volume() {
    let Some(cli) = clis::Cli::find("claude_local") else {
        return;
    };
    let volume = OnVolume::new();
    let repo = repository_in(&volume.0.join("repos"));
    commit_file(&repo, "README.md", README);
    let provider = ScriptedProvider::start(vec![
        Turn::Bash {
            command: "pwd && sed -i 's/^hello world$/hello from a pod/' README.md \
                      && printf 'one\\ntwo\\nthree\\n' > NOTES.md && echo edited"
                .into(),
        },
        Turn::Answer {
            text: "Edited the README and added the notes.".into(),
        },
    ])
    .await;
    // The agent's own config points at the main checkout: isolation is not
    // the agent's choice, in a pod either.
    let mut config = cli.config(&provider);
    config["cwd"] = json!(repo.to_str().unwrap());
    let data_dir = volume.0.join("instance");
    let t = setup_on(
        "claude_k8s",
        Script::default(),
        config,
        data_dir.clone(),
        fake::SELF_POD,
    )
    .await;
    t.k8s.set_api_url(&t.s.base);
    t.k8s.share_volume(Path::new(VOLUME));
    t.k8s.run_locally(LocalKubelet {
        home: cli.home.clone(),
        workdir: cli.home.join("work"),
    });
    let tid = task_on_repository(&t, &repo).await;
    let runs = t.ended_runs(1).await;
    let run_id = s(&runs[0]["id"]).to_string();
    let log =
        t.s.ok_get(&format!(
            "/api/heartbeat-runs/{run_id}/log?limitBytes=4194304"
        ))
        .await;
    assert_eq!(
        runs[0]["status"], "succeeded",
        "{}\n{}",
        runs[0], log["content"]
    );

    let workspaces =
        t.s.ok_get(&format!(
            "/api/companies/{}/execution-workspaces?issueId={tid}",
            t.cid
        ))
        .await;
    assert_eq!(workspaces.as_array().unwrap().len(), 1, "{workspaces}");
    let ws = &workspaces[0];
    let dir = PathBuf::from(s(&ws["cwd"]));
    assert!(dir.starts_with(data_dir.join("worktrees")), "{ws}");

    // The Job the API server received works there, on the claim.
    let posted = t.calls("POST", "/jobs");
    assert_eq!(posted.len(), 1, "{posted:?}");
    let pod = &posted[0].body["spec"]["template"]["spec"];
    let main = &pod["containers"][0];
    assert_eq!(main["workingDir"], s(&ws["cwd"]), "{main}");
    assert!(
        main["volumeMounts"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "data", "mountPath": VOLUME})),
        "{main}"
    );
    assert!(
        pod["volumes"].as_array().unwrap().contains(
            &json!({"name": "data", "persistentVolumeClaim": {"claimName": "paperclip-data"}})
        ),
        "{pod}"
    );
    let literal = |name: &str| {
        main["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .and_then(|e| e["value"].as_str())
            .map(String::from)
    };
    assert_eq!(
        literal("PAPERCLIP_WORKSPACE_CWD").as_deref(),
        Some(s(&ws["cwd"]))
    );
    assert_eq!(
        literal("PAPERCLIP_WORKSPACE_BRANCH").as_deref(),
        Some(s(&ws["branchName"]))
    );
    assert_eq!(
        literal("PAPERCLIP_EXECUTION_WORKSPACE_ID").as_deref(),
        Some(s(&ws["id"]))
    );

    // The CLI's shell ran in the worktree: its first result is its `pwd`.
    let events =
        t.s.ok_get(&format!("/api/heartbeat-runs/{run_id}/events?limit=1000"))
            .await;
    let results: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["eventType"] == "transcript.tool_result")
        .map(|e| e["message"].as_str().unwrap_or_default())
        .collect();
    assert!(
        results.iter().any(|m| m.contains(s(&ws["cwd"]))),
        "no tool result from {} in {results:?}",
        dir.display()
    );

    // The edit is in the worktree, and only there.
    assert_eq!(
        std::fs::read_to_string(dir.join("README.md")).unwrap(),
        "# App\nhello from a pod\nbye\n"
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

    // Recorded as a local run's changes are, and committed on the task branch.
    let changes =
        t.s.ok_get(&format!("/api/heartbeat-runs/{run_id}/workspace-changes"))
            .await;
    assert_eq!(changes["executionWorkspaceId"], ws["id"], "{changes}");
    let files = changes["files"].as_array().unwrap();
    let file = |path: &str| {
        files
            .iter()
            .find(|f| f["path"] == path)
            .unwrap_or_else(|| panic!("{path} is not among the changes: {changes}"))
    };
    assert_eq!(file("README.md")["kind"], "modified", "{changes}");
    assert_eq!(file("NOTES.md")["kind"], "added", "{changes}");
    assert_eq!(changes["filesChanged"], 2, "{changes}");
    assert_eq!(
        git(&dir, &["status", "--porcelain"]),
        "",
        "left uncommitted"
    );
    assert!(t.k8s.job_names().is_empty());
}

/// A worktree the Job cannot reach fails the run, naming what to change,
/// and no Job is made: a Job in some shared directory would do the task's
/// work where it is neither isolated nor recorded.
async fn refused(t: &Setup, repo: &Path, why: &str) {
    task_on_repository(t, repo).await;
    let runs = t.ended_runs(1).await;
    let run = &runs[0];
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["errorCode"], "invalid_working_directory", "{run}");
    let error = s(&run["error"]);
    assert!(error.contains(why), "{error}");
    assert!(error.contains("--data-dir /paperclip/instance"), "{error}");
    assert!(t.calls("POST", "/jobs").is_empty(), "a Job was made");
    assert!(t.calls("POST", "/secrets").is_empty(), "a Secret was made");
    assert_eq!(git(repo, &["status", "--porcelain"]), "");
}

/// The server's data dir (a temp dir here) is not on the volume.
#[tokio::test]
async fn a_worktree_off_the_shared_volume_fails_the_run_with_what_to_do() {
    let repos = std::env::temp_dir().join(format!("paperclip-k8s-repo-{}", uuid::Uuid::new_v4()));
    let repo = repository_in(&repos);
    commit_file(&repo, "README.md", README);
    let t = setup_kind("claude_k8s", Script::default(), json!({})).await;
    refused(
        &t,
        &repo,
        "is not on the shared volume mounted at /paperclip",
    )
    .await;
    let _ = std::fs::remove_dir_all(&repos);
}

/// The data dir is under `/paperclip`, but the control plane runs outside
/// the cluster (no pod of its name), so no Job mounts a volume of its.
#[tokio::test]
async fn a_control_plane_outside_the_cluster_cannot_lend_a_job_its_worktree() {
    let volume = OnVolume::new();
    let repo = repository_in(&volume.0.join("repos"));
    commit_file(&repo, "README.md", README);
    let config = json!({ "image": "ghcr.io/example/paperclip:1.0.0" });
    let t = setup_on(
        "opencode_k8s",
        Script::default(),
        config,
        volume.0.join("instance"),
        "laptop",
    )
    .await;
    refused(&t, &repo, "no shared volume").await;
}
