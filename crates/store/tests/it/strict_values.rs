//! A status the enums do not name is an error when read back, never a silent
//! default: the row keeps its value and every reader sees the problem. Runs on
//! SQLite, and on Postgres when `PAPERCLIP_TEST_PG_URL` is set.

use crate::common;

use common::store;

use paperclip_core::actor::Actor;
use paperclip_core::input::{NewCompany, NewIssue};
use paperclip_core::issue::{IssuePriority, IssueStatus};
use paperclip_store::{engine::db, issues, org::companies, Error};

#[tokio::test]
async fn an_unknown_stored_status_is_an_error_naming_it() {
    let store = store().await;
    let company = companies::create(
        &store,
        &Actor::local_board(),
        NewCompany {
            name: "Strict Co".into(),
            description: None,
            budget_monthly_cents: None,
            default_responsible_user_id: None,
            require_board_approval_for_new_agents: None,
        },
    )
    .await
    .unwrap();
    let issue = issues::create(
        &store,
        &Actor::local_board(),
        &company.id,
        NewIssue {
            title: "Read me back".into(),
            description: None,
            status: Some(IssueStatus::InReview),
            priority: Some(IssuePriority::High),
            project_id: None,
            goal_id: None,
            parent_id: None,
            assignee_agent_id: None,
            assignee_user_id: None,
            billing_code: None,
            label_ids: None,
            blocked_by_issue_ids: None,
        },
    )
    .await
    .unwrap();
    let read = issues::get(&store, &issue.identifier).await.unwrap();
    assert_eq!(
        (read.status, read.priority),
        (IssueStatus::InReview, IssuePriority::High)
    );

    // A value a newer build or a hand edit left behind.
    db::query("UPDATE issues SET status = 'someday' WHERE id = $1")
        .bind(&issue.id)
        .execute(store.pool())
        .await
        .unwrap();
    for result in [
        issues::get(&store, &issue.id).await.map(|_| ()),
        issues::list(
            &store,
            &company.id,
            &issues::Filter {
                limit: 50,
                ..issues::Filter::default()
            },
        )
        .await
        .map(|_| ()),
    ] {
        let err = result.expect_err("an unknown status must not read as a known one");
        assert!(matches!(err, Error::Database(_)), "{err:?}");
        assert!(
            err.to_string().contains("unknown issue status \"someday\""),
            "{err}"
        );
    }
    let (kept,): (String,) = db::query_as("SELECT status FROM issues WHERE id = $1")
        .bind(&issue.id)
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(kept, "someday", "the row keeps what it holds");
}
