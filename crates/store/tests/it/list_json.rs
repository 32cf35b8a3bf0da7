//! The default list written straight from the statement answers the bytes
//! the typed list serialises to, page by page: tricky text, nulls, every
//! status, labels and blockers, cursors and the text budget. Runs on SQLite,
//! and on Postgres when `PAPERCLIP_TEST_PG_URL` is set.

use crate::common;

use common::store;

use paperclip_core::actor::Actor;
use paperclip_core::input::{NewIssue, NewLabel};
use paperclip_core::issue::IssueStatus;
use paperclip_store::{engine::db, issues, issues::labels, Store};
use serde_json::json;

const PRIORITIES: [&str; 4] = ["critical", "high", "medium", "low"];

async fn task(store: &Store, company: &str, spec: serde_json::Value) -> String {
    let input: NewIssue = serde_json::from_value(spec).unwrap();
    issues::create(store, &Actor::local_board(), company, input)
        .await
        .unwrap()
        .id
}

/// Every page of `limit`, through the cursors, on both paths.
async fn same_pages(store: &Store, company: &str, limit: i64) -> usize {
    same_filtered_pages(store, company, limit, &issues::Filter::default()).await
}

/// Every page of `limit` of the tasks `base` filters, on both paths.
async fn same_filtered_pages(
    store: &Store,
    company: &str,
    limit: i64,
    base: &issues::Filter,
) -> usize {
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let filter = issues::Filter {
            limit,
            cursor,
            ..base.clone()
        };
        let typed = issues::list(store, company, &filter).await.unwrap();
        let raw = issues::list_json(store, company, &filter).await.unwrap();
        let expected = issues::list_body(store, &typed.issues).await.unwrap();
        assert_eq!(
            String::from_utf8(raw.body).unwrap(),
            String::from_utf8(expected).unwrap(),
            "page {pages} of {limit}"
        );
        assert_eq!(
            raw.next_cursor, typed.next_cursor,
            "page {pages} of {limit}"
        );
        pages += 1;
        match typed.next_cursor {
            Some(next) => cursor = Some(next),
            None => return pages,
        }
    }
}

#[tokio::test]
async fn the_default_list_answers_the_typed_lists_bytes() {
    let store = store().await;
    let company = common::company(&store, "Bytes Co").await;
    let empty = issues::Filter {
        limit: 50,
        ..issues::Filter::default()
    };
    let none = issues::list_json(&store, &company, &empty).await.unwrap();
    assert_eq!((none.body.as_slice(), none.next_cursor), (&b"[]"[..], None));

    let label = labels::create(
        &store,
        &Actor::local_board(),
        &company,
        NewLabel {
            name: "bug".into(),
            color: "#ff0000".into(),
        },
    )
    .await
    .unwrap();
    let agent: paperclip_core::input::NewAgent =
        serde_json::from_value(json!({ "name": "Ada" })).unwrap();
    let agent =
        paperclip_store::org::agents::create(&store, &Actor::local_board(), &company, agent)
            .await
            .unwrap()
            .id;
    let tricky = [
        "Quotes \" and back\\slash",
        "Lines\nand\ttabs\r and \u{1} \u{1f} \u{7f}",
        "Unicode: é ü 漢字 🦀 and </script><b>",
        "Plain",
    ];
    let mut ids = Vec::new();
    for (n, title) in tricky.iter().enumerate() {
        let status = IssueStatus::ALL[n % IssueStatus::ALL.len()];
        ids.push(
            task(
                &store,
                &company,
                json!({
                    "title": title,
                    "description": if n % 2 == 0 { json!(format!("{title} in the body")) } else { json!(null) },
                    "status": status.as_str(),
                    "assigneeAgentId": agent,
                    "priority": PRIORITIES[n % 4],
                    "billingCode": if n == 1 { json!("ACME-7") } else { json!(null) },
                }),
            )
            .await,
        );
    }
    for status in IssueStatus::ALL {
        task(
            &store,
            &company,
            json!({ "title": "One of each", "status": status.as_str(), "assigneeAgentId": agent }),
        )
        .await;
    }
    // Rows with relations take the typed path inside the raw page.
    task(
        &store,
        &company,
        json!({ "title": "Labelled", "labelIds": [label.id] }),
    )
    .await;
    let child = task(
        &store,
        &company,
        json!({ "title": "Blocked child", "parentId": ids[0], "blockedByIssueIds": [ids[1]] }),
    )
    .await;
    assert!(!child.is_empty());

    for limit in [1, 2, 3, 5, 50, 1_000] {
        let pages = same_pages(&store, &company, limit).await;
        assert!(pages >= 1);
    }

    // Filtered lists take one pass over the filter's own statement.
    let first = issues::get(&store, &ids[0]).await.unwrap();
    let filters = [
        issues::Filter {
            statuses: vec![IssueStatus::Todo, IssueStatus::Backlog],
            ..issues::Filter::default()
        },
        issues::Filter {
            assignee_agent_id: Some(agent.clone()),
            ..issues::Filter::default()
        },
        issues::Filter {
            label_id: Some(label.id.clone()),
            ..issues::Filter::default()
        },
        issues::Filter {
            parent_id: Some(ids[0].clone()),
            ..issues::Filter::default()
        },
        issues::Filter {
            q: Some(first.identifier.to_lowercase()),
            ..issues::Filter::default()
        },
        issues::Filter {
            assignee_agent_id: Some("no-such-agent".into()),
            ..issues::Filter::default()
        },
    ];
    for base in &filters {
        for limit in [1, 2, 50] {
            same_filtered_pages(&store, &company, limit, base).await;
        }
    }

    // Relations that come and go after creation: the kept flag follows.
    let patch = |v: serde_json::Value| -> paperclip_core::input::IssuePatch {
        serde_json::from_value(v).unwrap()
    };
    let board = Actor::local_board();
    issues::update(
        &store,
        &board,
        &ids[2],
        patch(json!({ "labelIds": [label.id] })),
    )
    .await
    .unwrap();
    issues::update(
        &store,
        &board,
        &ids[3],
        patch(json!({ "blockedByIssueIds": [ids[2]] })),
    )
    .await
    .unwrap();
    same_pages(&store, &company, 1_000).await;
    issues::update(&store, &board, &ids[2], patch(json!({ "labelIds": [] })))
        .await
        .unwrap();
    issues::update(
        &store,
        &board,
        &ids[3],
        patch(json!({ "blockedByIssueIds": [] })),
    )
    .await
    .unwrap();
    same_pages(&store, &company, 1_000).await;

    // A page stops at the text budget (1 MiB) before its row limit.
    let long = "x".repeat(400 * 1024);
    for _ in 0..4 {
        task(
            &store,
            &company,
            json!({ "title": "Long", "description": long }),
        )
        .await;
    }
    assert!(same_pages(&store, &company, 100).await >= 2);
}

#[tokio::test]
async fn an_unknown_status_fails_the_raw_list_too() {
    let store = store().await;
    let company = common::company(&store, "Strict List Co").await;
    let id = task(&store, &company, json!({ "title": "Fine" })).await;
    db::query("UPDATE issues SET priority = 'someday' WHERE id = $1")
        .bind(&id)
        .execute(store.pool())
        .await
        .unwrap();
    let filter = issues::Filter {
        limit: 50,
        ..issues::Filter::default()
    };
    let err = match issues::list_json(&store, &company, &filter).await {
        Ok(_) => panic!("an unknown priority must not be listed"),
        Err(err) => err,
    };
    assert!(
        err.to_string()
            .contains("unknown issue priority \"someday\""),
        "{err}"
    );
}
