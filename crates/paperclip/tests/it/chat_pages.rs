//! Chats stay out of task lists where the page is chosen, not after: a page
//! of `limit` tasks with chats among them is still `limit` tasks long, and
//! paging walks every task once (the unfiltered and filtered paths on
//! SQLite's JSON list, the typed list on Postgres).

use crate::common::TestServer;
use serde_json::{json, Value};

#[tokio::test]
async fn a_page_with_chats_among_its_tasks_is_full() {
    let s = TestServer::start().await;
    let company = s.company("Chatty Co").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let mut agents = Vec::new();
    for name in ["Ann", "Bob", "Cid"] {
        agents.push(
            s.agent(&cid, name, None).await["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    // Tasks and chats interleaved by number: 2 tasks, a chat, 2 tasks, ...
    let mut tasks = Vec::new();
    for (round, aid) in agents.iter().enumerate() {
        for n in 0..2 {
            let issue = s
                .issue(
                    &cid,
                    json!({ "title": format!("Task {round}.{n}"), "status": "todo" }),
                )
                .await;
            tasks.push(issue["id"].as_str().unwrap().to_string());
        }
        let chat = s
            .ok_post(&format!("/api/companies/{cid}/chats/{aid}"), json!({}))
            .await;
        assert!(chat["conversationAgentId"].is_string(), "{chat}");
    }
    let issue = s
        .issue(&cid, json!({ "title": "Last", "status": "todo" }))
        .await;
    tasks.push(issue["id"].as_str().unwrap().to_string());

    // A chat is `in_review`: the filtered path is asked for it too.
    for filter in ["", "&status=todo,in_review"] {
        let pages = s
            .pages(&format!("/api/companies/{cid}/issues?limit=3{filter}"))
            .await;
        let sizes: Vec<usize> = pages.iter().map(|(page, _)| page.len()).collect();
        assert_eq!(sizes, vec![3, 3, 1], "full pages ({filter}): {pages:?}");
        let mut seen: Vec<String> = pages
            .iter()
            .flat_map(|(page, _)| page.iter())
            .inspect(|i| assert_eq!(i["conversationAgentId"], Value::Null, "{i}"))
            .map(|i| i["id"].as_str().unwrap().to_string())
            .collect();
        seen.sort();
        let mut all = tasks.clone();
        all.sort();
        assert_eq!(seen, all, "every task once ({filter})");
    }
}
