//! Task search (`?q=`): full-text indexes on both engines over identifiers,
//! titles, descriptions and comments, a task with its thread; every word
//! must match, each as a prefix; it follows edits and deletions and never
//! crosses companies.

use crate::common;

use common::TestServer;
use serde_json::json;

async fn search(server: &TestServer, cid: &str, q: &str) -> Vec<String> {
    let q: String = q
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let found = server
        .ok_get(&format!("/api/companies/{cid}/issues?q={q}"))
        .await;
    let mut titles: Vec<String> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["title"].as_str().unwrap().to_string())
        .collect();
    titles.sort();
    titles
}

#[tokio::test]
async fn search_finds_words_prefixes_identifiers_and_comments_and_follows_edits() {
    let server = TestServer::start().await;
    let company = server.company("Search Co").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let login = server
        .issue(&cid, json!({ "title": "Fix the login page", "description": "Users cannot SIGN IN with SSO." }))
        .await;
    let deploy = server
        .issue(
            &cid,
            json!({ "title": "Deploy pipeline", "description": "Run deploy.sh nightly" }),
        )
        .await;
    let cafe = server
        .issue(&cid, json!({ "title": "Café menu", "description": null }))
        .await;
    let other = server.company("Elsewhere").await;
    server
        .issue(
            other["id"].as_str().unwrap(),
            json!({ "title": "Login elsewhere" }),
        )
        .await;

    assert_eq!(search(&server, &cid, "login").await, ["Fix the login page"]);
    assert_eq!(
        search(&server, &cid, "sign in").await,
        ["Fix the login page"],
        "descriptions, any case"
    );
    assert_eq!(
        search(&server, &cid, "logi").await,
        ["Fix the login page"],
        "a word matches as a prefix"
    );
    assert!(
        search(&server, &cid, "login deploy").await.is_empty(),
        "every word must match"
    );
    assert_eq!(search(&server, &cid, "deploy").await, ["Deploy pipeline"]);
    assert_eq!(
        search(&server, &cid, "CAFÉ").await,
        ["Café menu"],
        "any case, accents kept"
    );
    let ident = deploy["identifier"].as_str().unwrap();
    assert_eq!(
        search(&server, &cid, ident).await,
        ["Deploy pipeline"],
        "by identifier"
    );
    assert_eq!(
        search(&server, &cid, &ident.to_lowercase()).await,
        ["Deploy pipeline"],
        "an identifier in any case is that one task"
    );
    assert!(
        search(&server, &cid, "!!! ---").await.is_empty(),
        "punctuation only finds nothing"
    );
    assert!(
        search(&server, &cid, "\" OR 1=1 -- *").await.is_empty(),
        "quotes and operators are only separators"
    );

    // Comments: a word only a comment has finds its task; a deleted comment no longer does.
    let comment = server
        .ok_post(
            &format!("/api/issues/{}/comments", cafe["id"].as_str().unwrap()),
            json!({ "body": "Add the espresso tonic" }),
        )
        .await;
    assert_eq!(search(&server, &cid, "espresso").await, ["Café menu"]);
    assert_eq!(
        search(&server, &cid, "café tonic").await,
        ["Café menu"],
        "a task is searched with its thread: its words and its comments' combine"
    );
    assert!(
        search(&server, &cid, "login tonic").await.is_empty(),
        "but not across tasks"
    );
    let (status, _) = server
        .delete(&format!(
            "/api/issues/{}/comments/{}",
            cafe["id"].as_str().unwrap(),
            comment["id"].as_str().unwrap()
        ))
        .await;
    assert!(status.is_success());
    assert!(
        search(&server, &cid, "espresso").await.is_empty(),
        "deleted comments are not searched"
    );

    // Edits are followed; deleted tasks are gone.
    server
        .ok_patch(
            &format!("/api/issues/{}", login["id"].as_str().unwrap()),
            json!({ "title": "Fix the authentication page" }),
        )
        .await;
    assert!(search(&server, &cid, "login").await.is_empty());
    assert_eq!(
        search(&server, &cid, "authentication").await,
        ["Fix the authentication page"]
    );
    let (status, _) = server
        .delete(&format!("/api/issues/{}", deploy["id"].as_str().unwrap()))
        .await;
    assert!(status.is_success());
    assert!(search(&server, &cid, "deploy").await.is_empty());

    // Search combines with the other filters and survives a restart.
    let server = common::restart_keeping_data(server).await;
    let found = server
        .ok_get(&format!(
            "/api/companies/{cid}/issues?q=authentication&status=todo"
        ))
        .await;
    assert_eq!(
        found.as_array().map(Vec::len),
        Some(0),
        "backlog, not todo: {found}"
    );
    assert_eq!(
        search(&server, &cid, "authentication").await,
        ["Fix the authentication page"]
    );
}

/// A database made before search existed (schema 6) upgrades in place: the
/// tasks and comments it holds are found after the start that migrates it.
#[tokio::test]
async fn an_existing_database_is_indexed_on_upgrade() {
    let server = TestServer::start().await;
    let cid = server.company("Old Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let task = server
        .issue(&cid, json!({ "title": "Legacy invoice export" }))
        .await;
    server
        .ok_post(
            &format!("/api/issues/{}/comments", task["id"].as_str().unwrap()),
            json!({ "body": "Needs the quarterly ledger" }),
        )
        .await;
    let (data_dir, database_url) = server.stop_keeping_data();
    let url = common::database_url(&data_dir, &database_url);
    let pool = common::database(&url).await;
    // Back to schema 6: no search objects at all. The start migrates through
    // 7 (the first indexes), 21 (one index per task with its comments) and
    // 23 (the words of titles apart).
    let drops: &[&str] = if url.starts_with("postgres") {
        &[
            "DROP TRIGGER task_search_issue_insert ON issues",
            "DROP TRIGGER task_search_issue_update ON issues",
            "DROP TRIGGER task_search_comment_change ON issue_comments",
            "DROP FUNCTION task_search_issue_follow()",
            "DROP FUNCTION task_search_comment_follow()",
            "DROP FUNCTION task_search_rebuild(TEXT)",
            "DROP FUNCTION task_search_words(TEXT)",
            "DROP TRIGGER task_titles_insert ON issues",
            "DROP TRIGGER task_titles_update ON issues",
            "DROP FUNCTION task_titles_follow()",
            "DROP TABLE task_titles",
            "DROP FUNCTION task_search_vector(TEXT)",
            "DROP TABLE task_search",
        ]
    } else {
        &[
            "DROP TRIGGER task_search_issue_insert",
            "DROP TRIGGER task_search_issue_delete",
            "DROP TRIGGER task_search_issue_update",
            "DROP TRIGGER task_search_comment_insert",
            "DROP TRIGGER task_search_comment_update",
            "DROP TRIGGER task_search_comment_delete",
            "DROP TABLE task_search",
            "DROP TRIGGER task_titles_insert",
            "DROP TRIGGER task_titles_delete",
            "DROP TRIGGER task_titles_update",
            "DROP TABLE task_titles",
        ]
    };
    if url.starts_with("postgres") {
        // Schema 6 had text ids; so does this database again (and step 27
        // runs once more after the search steps).
        for sql in common::postgres_ids_back_to_text() {
            sqlx::query(&sql).execute(&pool).await.unwrap();
        }
    }
    for sql in drops {
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
    sqlx::query("DELETE FROM schema_migrations WHERE version IN (7, 21, 23)")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    let server = TestServer::start_with(data_dir, database_url, &[]).await;
    assert_eq!(
        search(&server, &cid, "invoice").await,
        ["Legacy invoice export"]
    );
    assert_eq!(
        search(&server, &cid, "ledger").await,
        ["Legacy invoice export"]
    );
}

/// A task is searched with its whole thread, and stays so: many comments at
/// once all count (on Postgres two writers of one task's words wait for each
/// other), an edit of its title keeps its comments' words, a move does not
/// touch them, a thread of distinct words past Postgres' tsvector size (1 MB)
/// still takes comments and its first part stays searchable, and a deleted
/// task is gone with its comments.
#[tokio::test]
async fn a_task_is_searched_with_its_whole_thread() {
    let server = TestServer::start().await;
    let cid = server.company("Thread Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let task = server
        .issue(&cid, json!({ "title": "Quarterly ledger" }))
        .await;
    let id = task["id"].as_str().unwrap().to_string();
    let comments = format!("/api/issues/{id}/comments");
    let sends = (0..12).map(|n| {
        server.post(
            &comments,
            json!({ "body": format!("note zeta{n}x for the ledger") }),
        )
    });
    for (status, body) in futures::future::join_all(sends).await {
        assert!(status.is_success(), "{status} {body}");
    }
    for n in 0..12 {
        assert_eq!(
            search(&server, &cid, &format!("zeta{n}x")).await,
            ["Quarterly ledger"],
            "comment {n} of twelve sent at once"
        );
    }

    server
        .ok_patch(
            &format!("/api/issues/{id}"),
            json!({ "title": "Yearly ledger", "status": "todo" }),
        )
        .await;
    assert_eq!(search(&server, &cid, "zeta3x").await, ["Yearly ledger"]);
    assert!(search(&server, &cid, "quarterly").await.is_empty());
    server
        .ok_patch(&format!("/api/issues/{id}"), json!({ "status": "blocked" }))
        .await;
    assert_eq!(
        search(&server, &cid, "yearly zeta7x").await,
        ["Yearly ledger"],
        "a move keeps the thread's words"
    );

    // A thread of many distinct words: four comments of 252,000 characters
    // each, every word new (112,000 distinct words in all).
    let heavy = server.issue(&cid, json!({ "title": "Heavy thread" })).await;
    let heavy_id = heavy["id"].as_str().unwrap().to_string();
    for part in 0..4 {
        let body: String = (0..28_000).map(|n| format!("w{part}q{n:05} ")).collect();
        let (status, answer) = server
            .post(
                &format!("/api/issues/{heavy_id}/comments"),
                json!({ "body": body }),
            )
            .await;
        assert!(status.is_success(), "comment {part}: {status} {answer}");
    }
    assert_eq!(search(&server, &cid, "heavy").await, ["Heavy thread"]);
    assert_eq!(
        search(&server, &cid, "w0q00001").await,
        ["Heavy thread"],
        "the start of the thread stays searchable"
    );

    let (status, _) = server.delete(&format!("/api/issues/{id}")).await;
    assert!(status.is_success());
    assert!(search(&server, &cid, "zeta3x").await.is_empty());
    assert!(search(&server, &cid, "ledger").await.is_empty());
}

/// A search lists the tasks whose identifier or title hold every word first,
/// then the other matches, newest first within each; its cursor carries the
/// rank, and the tasks page does the same by default ("Best match").
#[tokio::test]
async fn a_search_ranks_title_matches_first_and_pages_across_ranks() {
    let server = TestServer::start().await;
    let cid = server.company("Rank Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let titled = server
        .issue(&cid, json!({ "title": "Rotate the gateway keys" }))
        .await;
    let described = server
        .issue(
            &cid,
            json!({ "title": "Quarterly audit", "description": "Check the gateway logs" }),
        )
        .await;
    let commented = server
        .issue(&cid, json!({ "title": "Release notes" }))
        .await;
    server
        .ok_post(
            &format!("/api/issues/{}/comments", commented["id"].as_str().unwrap()),
            json!({ "body": "Mention the gateway change" }),
        )
        .await;
    server
        .issue(&cid, json!({ "title": "Unrelated chore" }))
        .await;
    let ident = |v: &serde_json::Value| v["identifier"].as_str().unwrap().to_string();

    let all = server
        .ok_get(&format!("/api/companies/{cid}/issues?q=gateway"))
        .await;
    let order: Vec<String> = all.as_array().unwrap().iter().map(ident).collect();
    assert_eq!(
        order,
        [ident(&titled), ident(&commented), ident(&described)],
        "the title match first, then the others newest first"
    );

    // One at a time through the cursor: the same order, each once.
    let pages = server
        .pages(&format!("/api/companies/{cid}/issues?q=gateway&limit=1"))
        .await;
    let seen: Vec<String> = pages
        .iter()
        .flat_map(|(page, _)| page.iter().map(ident))
        .collect();
    let cursors: Vec<String> = pages.iter().filter_map(|(_, next)| next.clone()).collect();
    assert_eq!(seen, order);
    let title_number = titled["issueNumber"].as_i64().unwrap();
    assert_eq!(cursors[0], format!("title~{title_number}"));
    assert!(cursors[1].starts_with("rest~"), "{cursors:?}");

    // A rank in the cursor of a list without ranks, or an unknown rank.
    for (query, cursor) in [
        ("", "rest~3"),
        ("q=gateway&", "best~3"),
        ("q=gateway&", "title~x"),
    ] {
        let (status, body) = server
            .get(&format!(
                "/api/companies/{cid}/issues?{query}cursor={cursor}"
            ))
            .await;
        assert_eq!(status, 400, "{query}{cursor}: {body}");
        assert_eq!(body["details"][0]["path"][0], "cursor", "{body}");
    }

    // The tasks page: best match first by default, newest first on request.
    let page = server.page("/RAN/tasks?q=gateway").await;
    let at = |html: &str, id: &str| html.find(&format!("data-issue-id=\"{id}\"")).unwrap();
    let id = |v: &serde_json::Value| v["id"].as_str().unwrap().to_string();
    assert!(at(&page, &id(&titled)) < at(&page, &id(&commented)));
    assert!(at(&page, &id(&commented)) < at(&page, &id(&described)));
    assert!(
        page.contains(r#"<option value="relevance" selected>Best match (title first)</option>"#),
        "the order is named"
    );
    let newest = server.page("/RAN/tasks?q=gateway&sort=newest").await;
    assert!(at(&newest, &id(&commented)) < at(&newest, &id(&described)));
    assert!(at(&newest, &id(&described)) < at(&newest, &id(&titled)));
    let plain = server.page("/RAN/tasks").await;
    assert!(
        !plain.contains("value=\"relevance\""),
        "no best match without a search"
    );
}
