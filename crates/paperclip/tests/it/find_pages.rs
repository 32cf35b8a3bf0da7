//! Finding things on the board: the task list's sorts and paging both ways
//! through 1,000 tasks, activity rows that name and link their item and fold
//! repeats, and an org chart with one tree per top-level agent.

use crate::common;

use common::visible_text;

use std::collections::HashSet;

use common::TestServer;
use futures::StreamExt;
use serde_json::{json, Value};

/// The value of the first `name="..."` attribute in `html`, unescaped.
fn attr(html: &str, name: &str) -> Option<String> {
    let at = html.find(&format!(r#"{name}=""#))?;
    let rest = &html[at + name.len() + 2..];
    Some(rest[..rest.find('"').unwrap()].replace("&amp;", "&"))
}

/// Task rows of a list page, in order: (identifier, priority).
fn rows(html: &str) -> Vec<(String, String)> {
    html.split("<tr data-issue-id=")
        .skip(1)
        .map(|row| {
            let ident = row.split(r#"<span class="ident">"#).nth(1).unwrap();
            let ident = ident[..ident.find('<').unwrap()].to_string();
            let prio = row.split(r#"class="prio p-"#).nth(1).unwrap();
            (ident, prio[..prio.find('"').unwrap()].to_string())
        })
        .collect()
}

fn rank(priority: &str) -> u8 {
    match priority {
        "critical" => 3,
        "high" => 2,
        "medium" => 1,
        _ => 0,
    }
}

/// All pages of a list from `first`, following `link` (next or previous):
/// the rows of each page in turn.
async fn walk(server: &TestServer, first: &str, link: &str) -> Vec<Vec<(String, String)>> {
    let mut pages = Vec::new();
    let mut path = first.to_string();
    loop {
        let html = server.page(&path).await;
        pages.push(rows(&html));
        assert!(pages.len() <= 20, "paging does not end: {path}");
        match attr(&html, &format!("{link} href")) {
            Some(next) => path = next,
            None => return pages,
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_tasks_page_both_ways_in_every_sort() {
    let server = TestServer::start().await;
    let company = server.company("Sorted Co").await;
    let cid = company["id"].as_str().unwrap();
    let prefix = company["issuePrefix"].as_str().unwrap().to_string();
    let priorities = ["low", "medium", "high", "critical"];
    let created: Vec<Value> = futures::stream::iter(0..1000)
        .map(|n| {
            let server = &server;
            async move {
                server
                    .issue(
                        cid,
                        json!({ "title": format!("Task {n}"), "priority": priorities[(n * 7 % 11) % 4] }),
                    )
                    .await
            }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    assert_eq!(created.len(), 1000);
    let all: HashSet<String> = created
        .iter()
        .map(|i| i["identifier"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(all.len(), 1000);
    let number = |ident: &str| -> i64 { ident.rsplit('-').next().unwrap().parse().unwrap() };

    // A task edited last comes first by "recently updated".
    let touched = format!("{prefix}-17");
    server
        .ok_patch(
            &format!("/api/issues/{touched}"),
            json!({ "title": "Touched" }),
        )
        .await;

    for sort in ["newest", "oldest", "identifier", "updated", "priority"] {
        let first = format!("/{prefix}/tasks?sort={sort}");
        let forward = walk(&server, &first, "data-next-page").await;
        let seen: Vec<(String, String)> = forward.iter().flatten().cloned().collect();
        let distinct: HashSet<&String> = seen.iter().map(|(i, _)| i).collect();
        assert_eq!(seen.len(), 1000, "{sort}: every task once");
        assert_eq!(distinct.len(), 1000, "{sort}: no repeats");
        assert!(forward.len() >= 5, "{sort}: 200 a page");
        match sort {
            "newest" => assert!(seen.windows(2).all(|w| number(&w[0].0) > number(&w[1].0))),
            "oldest" | "identifier" => {
                assert_eq!(seen[0].0, format!("{prefix}-1"));
                assert!(seen.windows(2).all(|w| number(&w[0].0) < number(&w[1].0)));
            }
            "updated" => assert_eq!(seen[0].0, touched),
            _ => assert!(
                seen.windows(2).all(|w| rank(&w[0].1) > rank(&w[1].1)
                    || (rank(&w[0].1) == rank(&w[1].1) && number(&w[0].0) > number(&w[1].0))),
                "priority order, newest first within one"
            ),
        }
        // Back from the last page by "previous": the same pages, reversed.
        let last_page = {
            let mut path = first.clone();
            for _ in 1..forward.len() {
                let html = server.page(&path).await;
                path = attr(&html, "data-next-page href").unwrap();
            }
            path
        };
        // Links carry the sort (by its canonical name; newest is the default).
        let named = match sort {
            "identifier" => "sort=oldest".to_string(),
            "newest" => String::new(),
            s => format!("sort={s}"),
        };
        assert!(last_page.contains(&named), "the sort is kept: {last_page}");
        let backward = walk(&server, &last_page, "data-prev-page").await;
        let mut expected = forward.clone();
        expected.reverse();
        assert_eq!(
            backward, expected,
            "{sort}: previous pages are the pages before"
        );
    }

    // The sort survives a filter, and is offered as selected.
    let filtered = server
        .page(&format!("/{prefix}/tasks?sort=priority&status=backlog"))
        .await;
    assert!(filtered.contains(r#"<option value="priority" selected>"#));
    let next = attr(&filtered, "data-next-page href").unwrap();
    assert!(
        next.contains("sort=priority") && next.contains("status=backlog"),
        "{next}"
    );
    // Filtered (a filter matching few tasks is sorted apart from the
    // order's index): the same order, every task once, both ways.
    let pages = walk(
        &server,
        &format!("/{prefix}/tasks?sort=priority&status=backlog"),
        "data-next-page",
    )
    .await;
    let seen: Vec<(String, String)> = pages.iter().flatten().cloned().collect();
    assert_eq!(
        seen.iter().map(|(i, _)| i).collect::<HashSet<_>>().len(),
        1000
    );
    assert!(seen.windows(2).all(|w| rank(&w[0].1) > rank(&w[1].1)
        || (rank(&w[0].1) == rank(&w[1].1) && number(&w[0].0) > number(&w[1].0))));
    // An unknown sort or cursor is the first page, newest first, not an error.
    let odd = server
        .page(&format!("/{prefix}/tasks?sort=nonsense&cursor=zz~x"))
        .await;
    assert_eq!(rows(&odd)[0].0, format!("{prefix}-1000"));
    // So is a place in the updated order that is not a time.
    let odd = server
        .page(&format!(
            "/{prefix}/tasks?sort=updated&cursor=not-a-time~500"
        ))
        .await;
    let first = server.page(&format!("/{prefix}/tasks?sort=updated")).await;
    assert_eq!(rows(&odd), rows(&first));
}

#[tokio::test]
async fn activity_rows_name_and_link_their_task_and_fold_repeats() {
    let server = TestServer::start().await;
    let company = server.company("Feed Co").await;
    let cid = company["id"].as_str().unwrap();
    let prefix = company["issuePrefix"].as_str().unwrap();
    let coder = server.agent(cid, "Coder", None).await;
    let issue = server
        .issue(cid, json!({ "title": "Fix the login form" }))
        .await;
    let ident = issue["identifier"].as_str().unwrap();
    for n in 0..5 {
        server
            .ok_post(
                &format!("/api/issues/{}/comments", issue["id"].as_str().unwrap()),
                json!({ "body": format!("note {n}") }),
            )
            .await;
    }
    server
        .ok_patch(&format!("/api/issues/{ident}"), json!({ "status": "todo" }))
        .await;

    for path in [
        format!("/{prefix}/activity"),
        format!("/{prefix}/dashboard"),
    ] {
        let html = server.page(&path).await;
        let text = visible_text(&html);
        assert!(
            text.contains(&format!("Board commented on {ident} Fix the login form ×5")),
            "{path}: {text}"
        );
        assert!(
            text.contains(&format!("Board moved {ident} Fix the login form to todo")),
            "{path}"
        );
        assert!(
            text.contains(&format!("Board created {ident} Fix the login form")),
            "{path}"
        );
        assert!(text.contains("Board added Coder"), "{path}: {text}");
        assert!(
            html.contains(&format!(r#"href="/{prefix}/tasks/{ident}""#)),
            "{path}: the task is linked"
        );
        assert!(
            html.contains(&format!(
                r#"href="/{prefix}/agents/{}""#,
                coder["urlKey"].as_str().unwrap()
            )),
            "{path}: the agent is linked"
        );
        assert!(
            !text.contains("issue.comment_added") && !text.contains(issue["id"].as_str().unwrap())
        );
        assert_eq!(
            html.matches("data-repeat=").count(),
            1,
            "{path}: one folded row"
        );
    }
}

/// A company of many agents gets the 24 that most need a look on its
/// dashboard (a failing agent first, even the last one hired), a line that
/// says so and links them all; the Agents page lists every one.
#[tokio::test]
async fn the_dashboard_shows_the_agents_that_most_need_a_look() {
    let server = TestServer::start().await;
    let company = server.company("Crowd Co").await;
    let cid = company["id"].as_str().unwrap();
    let p = company["issuePrefix"].as_str().unwrap();
    let mut workers = Vec::new();
    for i in 0..30 {
        let a = server.agent(cid, &format!("Worker {i:02}"), None).await;
        workers.push(a["id"].as_str().unwrap().to_string());
    }
    // What a card says an agent works on: its newest task in progress.
    let task = async |title: &str, status: &str, who: &str| {
        server
            .issue(
                cid,
                json!({ "title": title, "status": status, "assigneeAgentId": who }),
            )
            .await["identifier"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let old_work = task("Old work", "in_progress", &workers[0]).await;
    let new_work = task("New work", "in_progress", &workers[0]).await;
    let side_work = task("Side work", "in_progress", &workers[1]).await;
    task("Next up", "todo", &workers[1]).await;
    let failing = server
        .script_agent(cid, "Last Hired", "exit 1", json!({}))
        .await;
    let fid = failing["id"].as_str().unwrap().to_string();
    server.wake(&fid, json!({})).await;
    common::until(60, "the last hire to fail", async || {
        let a = server.ok_get(&format!("/api/agents/{fid}")).await;
        (a["status"] == "error").then_some(())
    })
    .await;

    let dash = server.page(&format!("/{p}/dashboard")).await;
    let cards: Vec<&str> = dash
        .split(r#"class="card agent-card""#)
        .skip(1)
        .map(|c| &c[..c.find("</a>").unwrap()])
        .collect();
    assert_eq!(cards.len(), 24, "cards on the dashboard");
    assert!(cards[0].contains("Last Hired"), "the failing agent first");
    let card = |name: &str| *cards.iter().find(|c| c.contains(name)).unwrap();
    assert!(
        card("Worker 00").contains(&new_work),
        "{}",
        card("Worker 00")
    );
    assert!(!card("Worker 00").contains(&old_work));
    assert!(card("Worker 01").contains(&side_work));
    assert!(card("Worker 02").contains("Not working on a task"));
    assert!(
        !cards.iter().any(|c| c.contains("Worker 29")),
        "the last idle hire is left out"
    );
    let text = visible_text(&dash);
    assert!(
        text.contains("The 24 that most need a look, of 31: all agents"),
        "{text}"
    );
    assert!(dash.contains(&format!(r#"href="/{p}/agents""#)));
    let all = server.page(&format!("/{p}/agents")).await;
    let row = |id: &str| {
        let at = all.find(&format!(r#"data-live-agent="{id}""#)).unwrap();
        let rest = &all[at..];
        rest[..rest.find("</tr>").unwrap()].to_string()
    };
    assert!(row(&workers[0]).contains(&new_work));
    assert!(!row(&workers[0]).contains(&old_work));
    assert!(row(&workers[1]).contains(&side_work));
    for i in 0..30 {
        assert!(
            all.contains(&format!("Worker {i:02}")),
            "Worker {i:02} listed"
        );
    }
    assert!(all.contains("Last Hired"));
}

#[tokio::test]
async fn the_org_chart_draws_one_tree_per_top_level_agent() {
    let server = TestServer::start().await;
    let company = server.company("Org Co").await;
    let cid = company["id"].as_str().unwrap();
    let prefix = company["issuePrefix"].as_str().unwrap();
    let ceo = server.agent(cid, "Chief", None).await;
    let ops = server.agent(cid, "Operator", None).await;
    let lead = server
        .agent(cid, "Lead", Some(ceo["id"].as_str().unwrap()))
        .await;
    server
        .agent(cid, "Helper", Some(lead["id"].as_str().unwrap()))
        .await;
    server
        .ok_post(
            &format!("/api/agents/{}/terminate", lead["id"].as_str().unwrap()),
            json!({}),
        )
        .await;

    let html = server.page(&format!("/{prefix}/org")).await;
    assert_eq!(
        html.matches("data-org-root").count(),
        2,
        "two separate trees"
    );
    let roots: Vec<&str> = html.split("data-org-root").skip(1).collect();
    assert!(roots[0].contains("Chief") && roots[0].contains("Lead") && roots[0].contains("Helper"));
    assert!(!roots[0].contains("Operator") && roots[1].contains("Operator"));
    for agent in [&ceo, &ops, &lead] {
        assert!(html.contains(&format!(
            r#"href="/{prefix}/agents/{}""#,
            agent["urlKey"].as_str().unwrap()
        )));
    }
    // The terminated manager's report still appears, under them.
    let lead_box = html.split("data-org-agent=\"Lead\"").nth(1).unwrap();
    let lead_box = &lead_box[..lead_box.find("</a>").unwrap()];
    assert!(
        lead_box.contains("data-status=\"terminated\""),
        "{lead_box}"
    );
    assert!(roots[0].contains("data-org-agent=\"Helper\""));
}

/// `tests/browser/find.mjs`: the palette, paging, the skip link and dark
/// mode in Chromium, on a company of 1,000 tasks and two top-level agents.
#[tokio::test(flavor = "multi_thread")]
async fn a_person_finds_things_by_keyboard_in_a_browser() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start().await;
    let company = server.company("Find Co").await;
    let cid = company["id"].as_str().unwrap();
    let chief = server.agent(cid, "Chief", None).await;
    server
        .agent(cid, "Builder", Some(chief["id"].as_str().unwrap()))
        .await;
    server.agent(cid, "Auditor", None).await;
    let mut fifth = None;
    for n in 1..=1_000 {
        let issue = server
            .issue(cid, json!({ "title": format!("Task {n}") }))
            .await;
        if n == 5 {
            fifth = Some(issue);
        }
    }
    let fifth = fifth.unwrap();
    for _ in 0..3 {
        server
            .ok_post(
                &format!("/api/issues/{}/comments", fifth["id"].as_str().unwrap()),
                json!({ "body": "Checked the zanzibarish supplier list." }),
            )
            .await;
    }
    common::browser::run("find", &server.base, std::time::Duration::from_secs(180)).await;
}
