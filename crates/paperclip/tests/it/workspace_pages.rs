//! The board's pages for execution workspaces (issue 36), over plain HTTP:
//! a project's repository set, changed and removed as its form does it
//! (a refused path says why and changes nothing), and a task's Changes view
//! and run page after a `process` agent changed files in the task's
//! worktree. In a browser: `changes_view_browser` (`tests/browser/workspaces.mjs`).

use crate::common;

use std::time::Duration;

use crate::common::repos::{repository, str_of as s};
use common::{visible_text, TestServer};
use serde_json::{json, Value};

/// The part of a page from the tag holding `from` to the next `until`.
fn part<'a>(page: &'a str, from: &str, until: &str) -> &'a str {
    let at = page
        .find(from)
        .unwrap_or_else(|| panic!("no {from:?} in the page"));
    let rest = &page[page[..at].rfind('<').unwrap_or(at)..];
    &rest[..rest.find(until).unwrap_or(rest.len())]
}

#[tokio::test]
async fn a_projects_repository_is_set_changed_and_removed_from_its_page() {
    let server = TestServer::start().await;
    let company = server.company("Codebase").await;
    let cid = s(&company["id"]);
    let p = s(&company["issuePrefix"]);
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "App" }),
        )
        .await;
    let pid = s(&project["id"]);
    let page_path = format!("/{p}/projects/{}", s(&project["urlKey"]));

    // Nothing declared: the page says so and offers the form.
    let page = server.page(&page_path).await;
    let codebase = part(&page, "id=\"codebase\"", "</section>");
    assert!(
        visible_text(codebase).contains("No repository"),
        "{codebase}"
    );
    assert!(codebase.contains(&format!("data-edit-repository=\"{pid}\"")));
    let form = part(&page, "data-api-form=\"project-repository\"", "</form>");
    assert!(
        form.contains(&format!("data-project-id=\"{pid}\"")),
        "{form}"
    );
    for field in [
        "name=\"cwd\"",
        "name=\"defaultRef\"",
        "class=\"form-error\"",
    ] {
        assert!(form.contains(field), "the form lacks {field}: {form}");
    }
    // The new-project form takes a repository too.
    let list = server.page(&format!("/{p}/projects")).await;
    let new_project = part(&list, "data-api-form=\"project\"", "</form>");
    assert!(new_project.contains("name=\"cwd\""), "{new_project}");

    // What the form sends, refused: the reason comes back for the form to
    // show, and nothing changed.
    let workspaces = format!("/api/projects/{pid}/workspaces");
    let plain = std::env::temp_dir().join(format!("paperclip-plain-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&plain).unwrap();
    for (cwd, reason) in [
        ("relative/app", "must be an absolute path"),
        (plain.to_str().unwrap(), "is not inside a git repository"),
        ("/no/such/paperclip/app", "cannot be read"),
    ] {
        let (status, answer) = server
            .post(&workspaces, json!({ "cwd": cwd, "defaultRef": "main" }))
            .await;
        assert_eq!(status, 422, "{cwd}: {answer}");
        assert!(s(&answer["error"]).contains(reason), "{cwd}: {answer}");
    }
    let page = server.page(&page_path).await;
    assert!(visible_text(part(&page, "id=\"codebase\"", "</section>")).contains("No repository"));

    // Declared: the page shows the repository and its branch.
    let repo = repository();
    let made = server
        .ok_post(
            &workspaces,
            json!({ "cwd": repo.to_str().unwrap(), "defaultRef": "main" }),
        )
        .await;
    let wid = s(&made["id"]);
    let page = server.page(&page_path).await;
    let codebase = part(&page, "id=\"codebase\"", "</section>");
    let text = visible_text(codebase);
    assert!(text.contains(repo.to_str().unwrap()), "{text}");
    assert!(text.contains("Default branch main"), "{text}");
    assert!(!text.contains("No repository"), "{text}");
    assert!(
        codebase.contains(&format!("data-url=\"{workspaces}/{wid}\"")),
        "Remove deletes this workspace: {codebase}"
    );
    assert!(!text.contains(wid), "no ids shown: {text}");

    // Edited as the dialog does (a cleared branch is null); a bad path is
    // refused and the page keeps the repository it had.
    server
        .ok_patch(
            &format!("{workspaces}/{wid}"),
            json!({ "cwd": repo.to_str().unwrap(), "defaultRef": null }),
        )
        .await;
    let (status, answer) = server
        .patch(
            &format!("{workspaces}/{wid}"),
            json!({ "cwd": plain.to_str().unwrap(), "defaultRef": "main" }),
        )
        .await;
    assert_eq!(status, 422, "{answer}");
    assert!(s(&answer["error"]).contains("is not inside a git repository"));
    let page = server.page(&page_path).await;
    let text = visible_text(part(&page, "id=\"codebase\"", "</section>"));
    assert!(text.contains(repo.to_str().unwrap()), "{text}");
    assert!(
        text.contains("Default branch the branch checked out in the repository"),
        "{text}"
    );

    // Removed: back to none, and every step is in the activity log.
    let (status, _) = server.delete(&format!("{workspaces}/{wid}")).await;
    assert_eq!(status, 200);
    let page = server.page(&page_path).await;
    assert!(visible_text(part(&page, "id=\"codebase\"", "</section>")).contains("No repository"));
    let actions = server.actions(cid).await;
    for action in [
        "project.workspace_created",
        "project.workspace_updated",
        "project.workspace_deleted",
    ] {
        assert_eq!(
            actions.iter().filter(|a| *a == action).count(),
            1,
            "{action} once (refusals write nothing): {actions:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&repo);
    let _ = std::fs::remove_dir_all(&plain);
}

#[tokio::test]
async fn the_changes_view_reads_outcome_first_and_marks_a_cut_patch() {
    let server = TestServer::start().await;
    let company = server.company("Changes").await;
    let cid = s(&company["id"]);
    let p = s(&company["issuePrefix"]);
    let repo = repository();
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "App" }),
        )
        .await;
    server
        .ok_post(
            &format!("/api/projects/{}/workspaces", s(&project["id"])),
            json!({ "cwd": repo.to_str().unwrap() }),
        )
        .await;
    // The first run edits README.md and writes a file too big for a run's
    // patch (256 KB); the second changes nothing.
    let script = "if [ -f big.txt ]; then echo nothing to do; exit 0; fi\n\
                  printf 'hello world\\n<b>bold</b>\\n' > README.md\n\
                  seq 1 12000 | sed 's/$/ of a long generated file/' > big.txt\n";
    let agent = server.script_agent(cid, "Coder", script, json!({})).await;
    let aid = s(&agent["id"]);
    let task = server
        .issue(
            cid,
            json!({ "title": "Write the big file", "status": "todo",
                "projectId": project["id"], "assigneeAgentId": aid }),
        )
        .await;
    let tid = s(&task["id"]);
    let ident = s(&task["identifier"]);
    let first = server.only_run_succeeded(cid, aid).await[0].clone();
    let second = server
        .wake(aid, json!({ "reason": "again", "issueId": tid }))
        .await;
    let second = server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", s(&second["id"])),
            30,
            |r| r["status"] == "succeeded",
        )
        .await;
    let recorded = server
        .wait_for(
            &format!("/api/heartbeat-runs/{}/workspace-changes", s(&second["id"])),
            30,
            |c| c["filesChanged"] == 0,
        )
        .await;
    assert_eq!(recorded["patch"], "", "{recorded}");

    let page = server.page(&format!("/{p}/tasks/{ident}")).await;
    let changes = part(&page, "id=\"changes\"", "</section>");
    let text = visible_text(changes);
    let ws = server
        .ok_get(&format!(
            "/api/companies/{cid}/execution-workspaces?issueId={tid}"
        ))
        .await;
    assert!(text.contains(s(&ws[0]["branchName"])), "{text}");
    assert!(text.contains(s(&ws[0]["cwd"])), "{text}");
    assert!(!text.contains(tid), "tasks are named by identifier: {text}");
    // Newest first: the run that changed nothing, then the one that did.
    let at = |run: &Value| {
        changes
            .find(&format!("id=\"changes-run-{}\"", s(&run["id"])))
            .expect("each run's changes are shown")
    };
    assert!(at(&second) < at(&first), "newest first");
    let nothing = part(
        changes,
        &format!("changes-run-{}", s(&second["id"])),
        "</article>",
    );
    let none = visible_text(nothing);
    assert!(none.starts_with("no changes"), "{none}");
    assert!(!nothing.contains("<pre"), "no patch for no changes");
    let cut = part(
        changes,
        &format!("changes-run-{}", s(&first["id"])),
        "</article>",
    );
    let words = visible_text(cut);
    assert!(
        words.starts_with("changed 2 files, +12002 \u{2212}1"),
        "{words}"
    );
    assert!(cut.contains("data-path=\"big.txt\""), "{cut}");
    assert!(cut.contains("data-path=\"README.md\""), "{cut}");
    // Added and removed lines are marked (and escaped), the cut is said, and
    // a long patch starts collapsed.
    assert!(
        cut.contains("<span class=\"d-del\">-hello\n</span>"),
        "{cut}"
    );
    assert!(cut.contains("<span class=\"d-add\">+&lt;b&gt;bold&lt;/b&gt;\n</span>"));
    assert!(cut.contains("data-truncated"), "{cut}");
    assert!(words.contains("Truncated:"), "{words}");
    assert!(
        cut.contains("<details class=\"patch\">"),
        "collapsed: {cut}"
    );

    // Above the runs: everything the task changed on its branch.
    let all = part(changes, "class=\"changes-task\"", "</article>");
    let words = visible_text(all);
    assert!(
        words.starts_with(&format!(
            "All changes on {} changed 2 files, +12002 \u{2212}1",
            s(&ws[0]["branchName"])
        )),
        "{words}"
    );
    assert!(changes.find("class=\"changes-task\"").unwrap() < at(&second));

    // Each run's page says what it changed and links to its place here.
    for (run, summary) in [
        (&first, "changed 2 files, +12002 \u{2212}1"),
        (&second, "no changes"),
    ] {
        let run_page = server
            .page(&format!(
                "/{p}/agents/{}/runs/{}",
                s(&agent["urlKey"]),
                s(&run["id"])
            ))
            .await;
        let text = visible_text(&run_page);
        assert!(text.contains(&format!("Changes {summary}")), "{text}");
        assert!(run_page.contains(&format!(
            "href=\"/{p}/tasks/{ident}#changes-run-{}\"",
            s(&run["id"])
        )));
    }
    let _ = std::fs::remove_dir_all(&repo);
}

#[tokio::test]
async fn changes_view_browser() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start().await;
    common::browser::run("workspaces", &server.base, Duration::from_secs(240)).await;
}
