//! The dashboard's task counts are kept by triggers (migration 9). They must
//! equal a real count after any mix of creates, status changes and deletes,
//! including tasks moving in opposite directions at the same moment (on
//! Postgres those run concurrently and lock the two counters they touch).
//! Runs on SQLite, and on Postgres when `PAPERCLIP_TEST_PG_URL` is set.

use crate::common;

use std::collections::BTreeMap;

use common::{company, store};

use paperclip_core::actor::Actor;
use paperclip_core::input::{IssuePatch, NewIssue};
use paperclip_core::issue::IssueStatus;
use paperclip_store::{engine::db, issues, views::dashboard, Store};

async fn task(store: &Store, company_id: &str, status: IssueStatus) -> String {
    issues::create(
        store,
        &Actor::local_board(),
        company_id,
        NewIssue {
            title: "Counted".into(),
            description: None,
            status: Some(status),
            priority: None,
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
    .unwrap()
    .id
}

async fn move_to(store: &Store, id: &str, status: IssueStatus) {
    issues::update(
        store,
        &Actor::local_board(),
        id,
        IssuePatch {
            status: Some(status),
            ..IssuePatch::default()
        },
    )
    .await
    .unwrap();
}

/// What the tasks table itself says.
async fn counted(store: &Store, company_id: &str) -> BTreeMap<String, i64> {
    db::query_as::<(String, i64)>(
        "SELECT status, COUNT(*) FROM issues WHERE company_id = $1 GROUP BY status",
    )
    .bind(company_id)
    .fetch_all(store.pool())
    .await
    .unwrap()
    .into_iter()
    .collect()
}

#[tokio::test]
async fn kept_counts_equal_a_real_count_after_concurrent_moves() {
    let store = store().await;
    let (a, b) = (
        company(&store, "Counted Co").await,
        company(&store, "Other Co").await,
    );
    let mut ids = Vec::new();
    for i in 0..16 {
        let status = if i % 2 == 0 {
            IssueStatus::Todo
        } else {
            IssueStatus::Blocked
        };
        ids.push((task(&store, &a, status).await, status));
    }
    task(&store, &b, IssueStatus::Backlog).await;

    // Every task flips between todo and blocked six times, all at once:
    // half of them go todo -> blocked while the other half go blocked -> todo.
    let mut flips = Vec::new();
    for (id, start) in ids.clone() {
        let store = store.clone();
        flips.push(tokio::spawn(async move {
            let mut status = start;
            for _ in 0..6 {
                status = if status == IssueStatus::Todo {
                    IssueStatus::Blocked
                } else {
                    IssueStatus::Todo
                };
                move_to(&store, &id, status).await;
            }
        }));
    }
    for flip in flips {
        flip.await.unwrap();
    }
    move_to(&store, &ids[0].0, IssueStatus::Cancelled).await;
    issues::delete(&store, &Actor::local_board(), &ids[1].0)
        .await
        .unwrap();

    for company_id in [&a, &b] {
        let shown = dashboard::get(&store, company_id, chrono::Utc::now())
            .await
            .unwrap()
            .tasks;
        let real = counted(&store, company_id).await;
        assert_eq!(shown.by_status, real, "company {company_id}");
        assert_eq!(shown.total, real.values().sum::<i64>());
    }
    let a_counts = counted(&store, &a).await;
    assert_eq!(a_counts.get("cancelled"), Some(&1));
    assert_eq!(a_counts.values().sum::<i64>(), 15, "one of 16 deleted");
}
