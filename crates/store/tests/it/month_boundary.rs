//! Budgets across a UTC month boundary, with the clock injected: a hard stop
//! in December holds until the first instant of January and no longer.
//! Runs on SQLite, and on Postgres when `PAPERCLIP_TEST_PG_URL` is set.

use crate::common;

use common::store;

use chrono::{TimeZone, Utc};
use paperclip_core::actor::Actor;
use paperclip_core::agent::AgentStatus;
use paperclip_core::budget::BudgetScope;
use paperclip_core::input::{NewAgent, NewCompany, NewCostEvent};
use paperclip_store::{
    money::budget_changes, money::budgets, money::costs, org::agents, org::companies,
};

fn cost(agent: &str, cents: u64, at: &str) -> NewCostEvent {
    NewCostEvent {
        agent_id: Some(agent.to_string()),
        issue_id: None,
        project_id: None,
        goal_id: None,
        heartbeat_run_id: None,
        billing_code: None,
        billing_type: None,
        provider: None,
        model: Some("m".into()),
        input_tokens: None,
        cached_input_tokens: None,
        output_tokens: None,
        cost_cents: Some(cents),
        occurred_at: Some(at.to_string()),
    }
}

#[tokio::test]
async fn a_december_stop_ends_at_the_first_instant_of_january() {
    let store = store().await;
    let board = Actor::local_board();
    let company = companies::create(
        &store,
        &board,
        NewCompany {
            name: "Clock Co".into(),
            description: None,
            budget_monthly_cents: None,
            default_responsible_user_id: None,
            require_board_approval_for_new_agents: None,
        },
    )
    .await
    .unwrap();
    let spec: NewAgent = serde_json::from_value(serde_json::json!({ "name": "Spender" })).unwrap();
    let agent = agents::create(&store, &board, &company.id, spec)
        .await
        .unwrap();
    let dec_31 = Utc.with_ymd_and_hms(2026, 12, 31, 23, 0, 0).unwrap();
    budget_changes::set(&store, &board, BudgetScope::Agent, &agent.id, 100, dec_31)
        .await
        .unwrap();

    let recorded = costs::record(
        &store,
        &board,
        &company.id,
        cost(&agent.id, 100, "2026-12-31T23:30:00Z"),
        Some(dec_31),
    )
    .await
    .unwrap();
    assert!(recorded
        .incidents
        .iter()
        .any(|i| i.kind.as_str() == "hard" && i.window_month == "2026-12"));
    let paused = agents::get(&store, &agent.id).await.unwrap();
    assert_eq!(
        (paused.status.as_str(), paused.pause_reason.as_deref()),
        ("paused", Some("budget"))
    );

    let last_second = Utc.with_ymd_and_hms(2026, 12, 31, 23, 59, 59).unwrap();
    assert!(
        budget_changes::rollover(&store, last_second)
            .await
            .unwrap()
            .is_empty(),
        "still December: still stopped"
    );
    assert_eq!(
        agents::get(&store, &agent.id).await.unwrap().status,
        AgentStatus::Paused
    );

    let new_year = Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap();
    let resumed = budget_changes::rollover(&store, new_year).await.unwrap();
    assert_eq!(resumed, vec![agent.id.clone()]);
    let agent_now = agents::get(&store, &agent.id).await.unwrap();
    assert_eq!(agent_now.status, AgentStatus::Idle);
    assert!(agent_now.pause_reason.is_none());
    let incidents = budgets::incidents(&store, &company.id, None).await.unwrap();
    assert!(incidents.iter().all(|i| i.status.as_str() == "resolved"
        && i.resolution.map(|r| r.as_str()) == Some("month_rollover")));

    // January has its own window: December's spend does not count against it.
    let jan = costs::summary(&store, &company.id, &costs::Window::month_of(new_year))
        .await
        .unwrap();
    assert_eq!(jan.spend_cents, 0);
    let dec = costs::summary(&store, &company.id, &costs::Window::month_of(dec_31))
        .await
        .unwrap();
    assert_eq!(dec.spend_cents, 100);
    let recorded = costs::record(
        &store,
        &board,
        &company.id,
        cost(&agent.id, 99, "2027-01-01T00:00:01Z"),
        Some(new_year),
    )
    .await
    .unwrap();
    assert!(
        recorded.incidents.iter().all(|i| i.kind.as_str() == "soft"),
        "99 of 100 warns but does not stop"
    );
    assert_eq!(
        agents::get(&store, &agent.id).await.unwrap().status,
        AgentStatus::Idle
    );
    // A second rollover in the same month changes nothing.
    assert!(budget_changes::rollover(&store, new_year)
        .await
        .unwrap()
        .is_empty());
}
