//! Search takes one of two plans by how many tasks a query matches (driven
//! by its matches when they are few, a walk of the company's tasks when they
//! are many); both must answer the same. Runs on SQLite, and on Postgres when
//! `PAPERCLIP_TEST_PG_URL` is set.

use crate::common;

use common::store;

use paperclip_store::issues;

/// Postgres chooses a search's plan from the words' statistics: kept fresh
/// here as autovacuum would keep them, so both plans are taken.
async fn analyze(store: &paperclip_store::Store) {
    if store.backend() == paperclip_store::Backend::Postgres {
        paperclip_store::engine::db::query("ANALYZE")
            .execute(store.pool())
            .await
            .unwrap();
    }
}

/// SQL for the id of the `i`-th planted row of a kind: a UUID, as every id
/// is (ids are `uuid` on Postgres, migration 27).
fn planted_id(store: &paperclip_store::Store, kind: u8, i: &str) -> String {
    match store.backend() {
        paperclip_store::Backend::Sqlite => {
            format!("printf('0000000{kind}-0000-7000-8000-%012d', {i})")
        }
        paperclip_store::Backend::Postgres => format!(
            "CAST('0000000{kind}-0000-7000-8000-' || lpad(CAST({i} AS TEXT), 12, '0') AS UUID)"
        ),
    }
}

/// `expr` (text naming an id) as an id.
fn as_id(store: &paperclip_store::Store, expr: &str) -> String {
    match store.backend() {
        paperclip_store::Backend::Sqlite => expr.to_string(),
        paperclip_store::Backend::Postgres => format!("CAST({expr} AS UUID)"),
    }
}

const LAB_MANY: &str = "00000005-0000-7000-8000-000000000001";
const LAB_FEW: &str = "00000005-0000-7000-8000-000000000002";

/// The numbers of the page before `number` in the newest-first list.
async fn newest_before(
    store: &paperclip_store::Store,
    company: &str,
    filter: &issues::Filter,
    number: i64,
) -> Vec<i64> {
    let at = issues::Position { key: None, number };
    let page = issues::list_sorted(
        store,
        company,
        filter,
        issues::Sort::Newest,
        Some((&at, issues::Direction::Before)),
    )
    .await
    .unwrap();
    page.issues.iter().map(|i| i.issue_number).collect()
}

#[tokio::test]
async fn common_and_rare_words_find_the_same_tasks_newest_first() {
    let store = store().await;
    let company = common::company(&store, "Many Co").await;
    // More tasks with the common word than the rare-plan bound (5,000),
    // bulk-inserted (the search indexes follow by trigger or expression).
    let n = 6_000;
    paperclip_store::engine::db::query(&format!(
        "INSERT INTO issues (id, company_id, title, description, issue_number, identifier, created_at, updated_at) \
         SELECT {}, {}, 'Common chore ' || i, CASE WHEN i % 1000 = 0 THEN 'rare okapi' ELSE NULL END, \
         i, 'MAN-' || i, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z' \
         FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2) SELECT i FROM n) s",
        planted_id(&store, 1, "i"),
        as_id(&store, "$1"),
    ))
    .bind(&company)
    .bind(n)
    .execute(store.pool())
    .await
    .unwrap();
    analyze(&store).await;
    let find = |q: &str, limit: i64| issues::Filter {
        q: Some(q.to_string()),
        limit,
        ..issues::Filter::default()
    };
    let common = issues::list(&store, &company, &find("common", 10))
        .await
        .unwrap();
    let numbers: Vec<i64> = common.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(
        numbers,
        (n - 9..=n).rev().collect::<Vec<_>>(),
        "the newest ten"
    );
    assert_eq!(
        common.next_cursor.map(|c| c.to_string()),
        Some(format!("title~{}", n - 9)),
        "a place in the title rank"
    );
    let rare = issues::list(&store, &company, &find("okapi", 100))
        .await
        .unwrap();
    let numbers: Vec<i64> = rare.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [6000, 5000, 4000, 3000, 2000, 1000]);
    let both = issues::list(&store, &company, &find("common okapi", 100))
        .await
        .unwrap();
    assert_eq!(both.issues.len(), 6);
    let page = issues::list(
        &store,
        &company,
        &issues::Filter {
            cursor: Some(issues::Position {
                key: None,
                number: 3000,
            }),
            ..find("chore", 2)
        },
    )
    .await
    .unwrap();
    let numbers: Vec<i64> = page.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [2999, 2998], "a common word pages with the cursor");

    // A word common in comments only: the tasks of its comments match, on
    // the page walk and in the count, and a deleted comment no longer does.
    paperclip_store::engine::db::query(&format!(
        "INSERT INTO issue_comments (id, company_id, issue_id, author_type, body, deleted_at, created_at, updated_at) \
         SELECT {}, {}, {}, 'user', 'zebra crossing ' || i, NULL, \
         '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z' \
         FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2) SELECT i FROM n) s",
        planted_id(&store, 2, "i"),
        as_id(&store, "$1"),
        planted_id(&store, 1, "i"),
    ))
    .bind(&company)
    .bind(5_100)
    .execute(store.pool())
    .await
    .unwrap();
    paperclip_store::engine::db::query(
        "UPDATE issue_comments SET deleted_at = '2026-01-02T00:00:00.000Z' \
         WHERE id = '00000002-0000-7000-8000-000000005100'",
    )
    .execute(store.pool())
    .await
    .unwrap();
    analyze(&store).await;
    let zebra = issues::list(&store, &company, &find("zebra", 3))
        .await
        .unwrap();
    let numbers: Vec<i64> = zebra.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(
        numbers,
        [5099, 5098, 5097],
        "matched through their comments"
    );
    let (count, more) = issues::count(&store, &company, &find("zebra", 3), 10_000)
        .await
        .unwrap();
    assert_eq!((count, more), (5_099, false));
    let one = issues::list(&store, &company, &find("crossing 42", 200))
        .await
        .unwrap();
    let numbers: Vec<i64> = one.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers.len(), 111, "42, 420-429, 4200-4299: {numbers:?}");
    assert!(numbers.contains(&42), "{numbers:?}");

    // Tasks whose rowids run against their numbers (inserted newest first,
    // as an import might), a word matching more than the rare-plan bound:
    // the walk reads number ranges, so the order and the cursor hold; only
    // its speed relies on rowids following numbers.
    let back = common::company(&store, "Back Co").await;
    paperclip_store::engine::db::query(&format!(
        "INSERT INTO issues (id, company_id, title, issue_number, identifier, created_at, updated_at) \
         SELECT {}, {}, CASE WHEN i % 3 = 0 THEN 'Common errand ' || i ELSE 'Other ' || i END, \
         i, 'BAK-' || i, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z' \
         FROM (WITH RECURSIVE n(i) AS (SELECT CAST($2 AS BIGINT) UNION ALL SELECT i - 1 FROM n WHERE i > 1) SELECT i FROM n) s",
        planted_id(&store, 3, "i"),
        as_id(&store, "$1"),
    ))
    .bind(&back)
    .bind(16_000)
    .execute(store.pool())
    .await
    .unwrap();
    analyze(&store).await;
    let newest = issues::list(&store, &back, &find("errand", 4))
        .await
        .unwrap();
    let numbers: Vec<i64> = newest.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [15999, 15996, 15993, 15990]);
    let next = issues::list(
        &store,
        &back,
        &issues::Filter {
            cursor: newest.next_cursor,
            ..find("errand", 3)
        },
    )
    .await
    .unwrap();
    let numbers: Vec<i64> = next.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [15987, 15984, 15981], "the next page, no skips");
    assert_eq!(
        newest_before(&store, &back, &find("errand", 3), 3000).await,
        [3009, 3006, 3003],
        "the page before a position"
    );
    let oldest = issues::list_sorted(
        &store,
        &back,
        &find("errand", 3),
        issues::Sort::Oldest,
        None,
    )
    .await
    .unwrap();
    let numbers: Vec<i64> = oldest.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [3, 6, 9], "oldest first");
    let (count, more) = issues::count(&store, &back, &find("errand", 3), 10_000)
        .await
        .unwrap();
    assert_eq!((count, more), (5_333, false));
    let (count, more) = issues::count(&store, &back, &find("errand", 3), 100)
        .await
        .unwrap();
    assert_eq!((count, more), (100, true), "counted up to the cap");
    // A prefix of many tasks' word and no whole word of its own: counted as
    // a prefix once its whole word finds none.
    for (q, cap, expected) in [
        ("erran", 100, (100, true)),
        ("erran", 6_000, (5_333, false)),
    ] {
        let got = issues::count(&store, &back, &find(q, 3), cap)
            .await
            .unwrap();
        assert_eq!(got, expected, "{q} up to {cap}");
    }

    // Labels take the same two plans: one on most tasks (a walk probing each
    // task), one on few (its tasks drive); pages and counts agree with them.
    paperclip_store::engine::db::query(&format!(
        "INSERT INTO labels (id, company_id, name, color, created_at, updated_at) VALUES \
         ('{LAB_MANY}', $1, 'many', '#000000', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'), \
         ('{LAB_FEW}', $1, 'few', '#000000', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
    ))
    .bind(&back)
    .execute(store.pool())
    .await
    .unwrap();
    analyze(&store).await;
    paperclip_store::engine::db::query(&format!(
        "INSERT INTO issue_labels (issue_id, label_id) \
         SELECT id, {} FROM issues \
         WHERE company_id = $1 AND (issue_number % 2 = 0 OR issue_number % 1000 = 7)",
        as_id(
            &store,
            &format!("CASE WHEN issue_number % 1000 = 7 THEN '{LAB_FEW}' ELSE '{LAB_MANY}' END")
        ),
    ))
    .bind(&back)
    .execute(store.pool())
    .await
    .unwrap();
    analyze(&store).await;
    let by_label = |label: &str, limit: i64| issues::Filter {
        label_id: Some(label.to_string()),
        limit,
        ..issues::Filter::default()
    };
    let many = issues::list(&store, &back, &by_label(LAB_MANY, 3))
        .await
        .unwrap();
    let numbers: Vec<i64> = many.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [16000, 15998, 15996]);
    let few = issues::list(&store, &back, &by_label(LAB_FEW, 100))
        .await
        .unwrap();
    let numbers: Vec<i64> = few.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(
        numbers,
        (0..16).rev().map(|k| k * 1000 + 7).collect::<Vec<_>>()
    );
    for (label, expected) in [(LAB_MANY, 8_000), (LAB_FEW, 16)] {
        let (count, more) = issues::count(&store, &back, &by_label(label, 3), 10_000)
            .await
            .unwrap();
        assert_eq!((count, more), (expected, false), "{label}");
    }
    let both = issues::Filter {
        q: Some("errand".into()),
        ..by_label(LAB_MANY, 2)
    };
    let page = issues::list(&store, &back, &both).await.unwrap();
    let numbers: Vec<i64> = page.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [15996, 15990], "a word and a label together");
    let (count, _) = issues::count(&store, &back, &both, 10_000).await.unwrap();
    assert_eq!(count, 2_666);

    // A label alone is read from its own numbers (migration 24, filled by
    // trigger for rows written without them, as above): the cursor's next
    // page both ways, the JSON page, and with a status beside it.
    let next = issues::list(
        &store,
        &back,
        &issues::Filter {
            cursor: many.next_cursor.clone(),
            ..by_label(LAB_MANY, 3)
        },
    )
    .await
    .unwrap();
    let numbers: Vec<i64> = next.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [15994, 15992, 15990], "the next page of a label");
    let json = issues::list_json(
        &store,
        &back,
        &issues::Filter {
            cursor: many.next_cursor.clone(),
            ..by_label(LAB_MANY, 3)
        },
    )
    .await
    .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&json.body).unwrap();
    let numbers: Vec<i64> = body
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["issueNumber"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, [15994, 15992, 15990], "the same as JSON");
    assert_eq!(json.next_cursor.map(|c| c.number), Some(15990));
    assert_eq!(
        newest_before(&store, &back, &by_label(LAB_MANY, 3), 9).await,
        [14, 12, 10],
        "the page before a place"
    );
    paperclip_store::engine::db::query(
        "UPDATE issues SET status = 'done' WHERE company_id = $1 AND issue_number % 4 = 0",
    )
    .bind(&back)
    .execute(store.pool())
    .await
    .unwrap();
    let done = issues::list(
        &store,
        &back,
        &issues::Filter {
            statuses: vec![paperclip_core::issue::IssueStatus::Done],
            ..by_label(LAB_MANY, 3)
        },
    )
    .await
    .unwrap();
    let numbers: Vec<i64> = done.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [16000, 15996, 15992], "a label and a status");

    // Another company's label picks nothing here, though its tasks' numbers
    // are this company's numbers too.
    let elsewhere = issues::list(&store, &company, &by_label(LAB_MANY, 3))
        .await
        .unwrap();
    assert!(elsewhere.issues.is_empty(), "{:?}", elsewhere.next_cursor);
    let json = issues::list_json(&store, &company, &by_label(LAB_MANY, 3))
        .await
        .unwrap();
    assert_eq!(json.body, b"[]");
    let (count, _) = issues::count(&store, &company, &by_label(LAB_MANY, 3), 10_000)
        .await
        .unwrap();
    assert_eq!(count, 0, "nor counts any");
}

/// Matches in the identifier or title come first, then the others, newest
/// first in each; pages follow one another across the two ranks both ways,
/// with a common word (walked) and a rarer one (driven by its matches).
#[tokio::test]
async fn a_search_lists_title_matches_first_and_pages_across_its_ranks() {
    let store = store().await;
    let company = common::company(&store, "Rank Co").await;
    let n: i64 = 12_000;
    paperclip_store::engine::db::query(&format!(
        "INSERT INTO issues (id, company_id, title, description, issue_number, identifier, created_at, updated_at) \
         SELECT {}, {}, CASE WHEN i % 2 = 0 THEN 'Widget ' || i ELSE 'Other ' || i END, \
         CASE WHEN i % 2 = 1 AND i % 5 = 0 THEN 'Needs a widget' ELSE NULL END, \
         i, 'RNK-' || i, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z' \
         FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2) SELECT i FROM n) s",
        planted_id(&store, 4, "i"),
        as_id(&store, "$1"),
    ))
    .bind(&company)
    .bind(n)
    .execute(store.pool())
    .await
    .unwrap();
    analyze(&store).await;
    let title: Vec<i64> = (1..=n).rev().filter(|i| i % 2 == 0).collect();
    let rest: Vec<i64> = (1..=n).rev().filter(|i| i % 2 == 1 && i % 5 == 0).collect();
    let expected: Vec<i64> = title.iter().chain(&rest).copied().collect();
    let find = |limit: i64, cursor: Option<issues::Position>| issues::Filter {
        q: Some("widget".to_string()),
        limit,
        cursor,
        ..issues::Filter::default()
    };
    // Page through all of it, 1,000 at a time.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = issues::list(&store, &company, &find(1_000, cursor.clone()))
            .await
            .unwrap();
        seen.extend(page.issues.iter().map(|i| i.issue_number));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen.len(), expected.len(), "every match once");
    assert!(
        seen == expected,
        "title matches, then the rest, newest first in each"
    );
    let (count, more) = issues::count(&store, &company, &find(10, None), 10_000)
        .await
        .unwrap();
    assert_eq!((count, more), (expected.len() as i64, false));

    // A page ending exactly at the end of the title rank says more follow.
    let end = issues::list(
        &store,
        &company,
        &find(
            2,
            Some(issues::Position::parse(issues::Sort::Relevance, "title~6").unwrap()),
        ),
    )
    .await
    .unwrap();
    let numbers: Vec<i64> = end.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [4, 2]);
    assert_eq!(
        end.next_cursor.map(|c| c.to_string()).as_deref(),
        Some("title~2")
    );
    let first_rest = issues::list(
        &store,
        &company,
        &find(
            2,
            Some(issues::Position::parse(issues::Sort::Relevance, "title~2").unwrap()),
        ),
    )
    .await
    .unwrap();
    let numbers: Vec<i64> = first_rest.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [11_995, 11_985], "the rest follow the title rank");

    // Backwards across the ranks, as the tasks page's "Previous" reads.
    let before = |at: &str, limit: i64| {
        let at = issues::Position::parse(issues::Sort::Relevance, at).unwrap();
        let store = &store;
        let company = &company;
        async move {
            let page = issues::list_sorted(
                store,
                company,
                &find(limit, None),
                issues::Sort::Relevance,
                Some((&at, issues::Direction::Before)),
            )
            .await
            .unwrap();
            let numbers: Vec<i64> = page.issues.iter().map(|i| i.issue_number).collect();
            (numbers, page.more, page.first.map(|p| p.to_string()))
        }
    };
    assert_eq!(
        before("rest~11985", 3).await,
        (vec![4, 2, 11_995], true, Some("title~4".to_string()))
    );
    assert_eq!(
        before("title~11994", 5).await,
        (
            vec![12_000, 11_998, 11_996],
            false,
            Some("title~12000".to_string())
        )
    );

    // A search of a word found in few titles and many descriptions.
    paperclip_store::engine::db::query(
        "UPDATE issues SET title = 'Sprocket widget' WHERE issue_number IN (7, 9)",
    )
    .execute(store.pool())
    .await
    .unwrap();
    analyze(&store).await;
    let page = issues::list(&store, &company, &find(3, None))
        .await
        .unwrap();
    let numbers: Vec<i64> = page.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [12_000, 11_998, 11_996]);
    let sprocket = issues::list(
        &store,
        &company,
        &issues::Filter {
            q: Some("sprocket widget".to_string()),
            limit: 10,
            ..issues::Filter::default()
        },
    )
    .await
    .unwrap();
    let numbers: Vec<i64> = sprocket.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [9, 7], "both words in two titles");

    // A ranked place is refused where the list has no ranks.
    let unranked = issues::list(
        &store,
        &company,
        &issues::Filter {
            cursor: Some(issues::Position::parse(issues::Sort::Relevance, "rest~5").unwrap()),
            limit: 5,
            ..issues::Filter::default()
        },
    )
    .await;
    assert!(
        matches!(unranked, Err(paperclip_store::Error::Invalid { .. })),
        "{:?}",
        unranked.err()
    );
}

/// Postgres sessions run without parallel workers (see `Store::connect`).
#[tokio::test]
async fn postgres_sessions_take_no_parallel_workers() {
    let store = store().await;
    if store.backend() != paperclip_store::Backend::Postgres {
        return;
    }
    let (workers,): (String,) =
        paperclip_store::engine::db::query_as("SHOW max_parallel_workers_per_gather")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(workers, "0");
}
