//! Search takes one of two plans by how many tasks a query matches (driven
//! by its matches when they are few, a walk of the company's tasks when they
//! are many); both must answer the same. Runs on SQLite, and on Postgres when
//! `PAPERCLIP_TEST_PG_URL` is set.

mod common;

use common::store;

use paperclip_core::actor::Actor;
use paperclip_core::input::NewCompany;
use paperclip_store::{companies, issues};

#[tokio::test]
async fn common_and_rare_words_find_the_same_tasks_newest_first() {
    let store = store().await;
    let company = companies::create(
        &store,
        &Actor::local_board(),
        NewCompany {
            name: "Many Co".into(),
            description: None,
            budget_monthly_cents: None,
            default_responsible_user_id: None,
            require_board_approval_for_new_agents: None,
        },
    )
    .await
    .unwrap();
    // More tasks with the common word than the rare-plan bound (5,000),
    // bulk-inserted (the search indexes follow by trigger or expression).
    let n = 5_200;
    paperclip_store::db::query(
        "INSERT INTO issues (id, company_id, title, description, issue_number, identifier, created_at, updated_at) \
         SELECT 'id-' || i, $1, 'Common chore ' || i, CASE WHEN i % 1000 = 0 THEN 'rare okapi' ELSE NULL END, \
         i, 'MAN-' || i, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z' \
         FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2) SELECT i FROM n) s",
    )
    .bind(&company.id)
    .bind(n)
    .execute(store.pool())
    .await
    .unwrap();
    let find = |q: &str, limit: i64| issues::Filter {
        q: Some(q.to_string()),
        limit,
        ..issues::Filter::default()
    };
    let common = issues::list(&store, &company.id, &find("common", 10))
        .await
        .unwrap();
    let numbers: Vec<i64> = common.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(
        numbers,
        (n - 9..=n).rev().collect::<Vec<_>>(),
        "the newest ten"
    );
    assert_eq!(common.next_cursor, Some(n - 9));
    let rare = issues::list(&store, &company.id, &find("okapi", 100))
        .await
        .unwrap();
    let numbers: Vec<i64> = rare.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [5000, 4000, 3000, 2000, 1000]);
    let both = issues::list(&store, &company.id, &find("common okapi", 100))
        .await
        .unwrap();
    assert_eq!(both.issues.len(), 5);
    let page = issues::list(
        &store,
        &company.id,
        &issues::Filter {
            cursor: Some(3000),
            ..find("chore", 2)
        },
    )
    .await
    .unwrap();
    let numbers: Vec<i64> = page.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers, [2999, 2998], "a common word pages with the cursor");

    // A word common in comments only: the tasks of its comments match, on
    // the page walk and in the count, and a deleted comment no longer does.
    paperclip_store::db::query(
        "INSERT INTO issue_comments (id, company_id, issue_id, author_type, body, deleted_at, created_at, updated_at) \
         SELECT 'c-' || i, $1, 'id-' || i, 'user', 'zebra crossing ' || i, \
         CASE WHEN i = 5100 THEN '2026-01-02T00:00:00.000Z' ELSE NULL END, \
         '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z' \
         FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2) SELECT i FROM n) s",
    )
    .bind(&company.id)
    .bind(5_100)
    .execute(store.pool())
    .await
    .unwrap();
    let zebra = issues::list(&store, &company.id, &find("zebra", 3))
        .await
        .unwrap();
    let numbers: Vec<i64> = zebra.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(
        numbers,
        [5099, 5098, 5097],
        "matched through their comments"
    );
    let (count, more) = issues::count(&store, &company.id, &find("zebra", 3), 10_000)
        .await
        .unwrap();
    assert_eq!((count, more), (5_099, false));
    let one = issues::list(&store, &company.id, &find("crossing 42", 200))
        .await
        .unwrap();
    let numbers: Vec<i64> = one.issues.iter().map(|i| i.issue_number).collect();
    assert_eq!(numbers.len(), 111, "42, 420-429, 4200-4299: {numbers:?}");
    assert!(numbers.contains(&42), "{numbers:?}");
}
