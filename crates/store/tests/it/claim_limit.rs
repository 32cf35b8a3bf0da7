//! `maxConcurrentRuns` is enforced by the claim itself, so executors that
//! race (two dispatch passes, two servers on one database) cannot start more
//! runs of an agent than its policy allows.
//! Runs on SQLite, and on Postgres when `PAPERCLIP_TEST_PG_URL` is set.

use crate::common;

use common::store;

use paperclip_core::actor::Actor;
use paperclip_core::heartbeat::WakeSource;
use paperclip_core::input::{NewAgent, NewCompany};
use paperclip_store::wakes::{self, Wake};
use paperclip_store::{org::agents, org::companies, runs};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_beyond_max_concurrent_runs_are_refused_even_when_they_race() {
    let store = store().await;
    let board = Actor::local_board();
    let company = companies::create(
        &store,
        &board,
        NewCompany {
            name: "Slots Co".into(),
            description: None,
            budget_monthly_cents: None,
            default_responsible_user_id: None,
            require_board_approval_for_new_agents: None,
        },
    )
    .await
    .unwrap();
    let spec: NewAgent = serde_json::from_value(serde_json::json!({
        "name": "Pair",
        "runtimeConfig": { "heartbeat": { "maxConcurrentRuns": 2 } },
    }))
    .unwrap();
    let agent = agents::create(&store, &board, &company.id, spec)
        .await
        .unwrap();
    let mut queued = Vec::new();
    for n in 1..=5 {
        let task = format!("0193a6f4-6b2a-7c4e-9d1f-00000000000{n}");
        let woken = wakes::enqueue(
            &store,
            &board,
            Wake {
                agent_id: agent.id.clone(),
                source: WakeSource::OnDemand,
                trigger_detail: Some("manual".into()),
                reason: Some("slots".into()),
                payload: None,
                issue_id: Some(task),
                idempotency_key: None,
            },
        )
        .await
        .unwrap();
        assert_eq!(woken.request.status.as_str(), "queued");
        queued.push(woken.run.unwrap().id);
    }
    let claims = queued.iter().map(|id| {
        let store = store.clone();
        let id = id.clone();
        tokio::spawn(async move { runs::claim(&store, &id, "test-instance").await })
    });
    let mut started = 0;
    for claim in claims.collect::<Vec<_>>() {
        if claim.await.unwrap().unwrap().is_some() {
            started += 1;
        }
    }
    assert_eq!(started, 2);
    assert_eq!(
        runs::running_for_agent(&store, &agent.id)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        runs::queued_for_agent(&store, &agent.id)
            .await
            .unwrap()
            .len(),
        3
    );
}
