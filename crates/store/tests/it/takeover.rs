//! Several instances on one database (`store::fleet`): a lost run is taken
//! over by exactly one of the instances racing for it, a live instance's
//! run is never seen as lost, and an instance finds the runs it must let go.
//! Runs on SQLite, and on Postgres when `PAPERCLIP_TEST_PG_URL` is set.

use std::time::Duration;

use crate::common;

use common::store;

use paperclip_core::actor::Actor;
use paperclip_core::heartbeat::WakeSource;
use paperclip_core::input::{NewAgent, NewCompany};
use paperclip_store::fleet::{instances, Instance};
use paperclip_store::wakes::{self, Wake};
use paperclip_store::{org::agents, org::companies, runs, Store};

fn instance(id: &str) -> Instance {
    Instance {
        id: id.into(),
        incarnation: uuid::Uuid::new_v4().to_string(),
        hostname: "host".into(),
        pid: 1,
        version: "test".into(),
        started_at: String::new(),
        renewed_at: String::new(),
        lease_expires_at: String::new(),
        stopped_at: None,
    }
}

/// Two running runs of two agents: one claimed by `dead`, one by `alive`.
async fn two_runs(store: &Store) -> (String, String) {
    let board = Actor::local_board();
    let company = companies::create(
        store,
        &board,
        NewCompany {
            name: "Fleet Co".into(),
            description: None,
            budget_monthly_cents: None,
            default_responsible_user_id: None,
            require_board_approval_for_new_agents: None,
        },
    )
    .await
    .unwrap();
    let mut ids = Vec::new();
    for (name, owner) in [("Lost", "dead"), ("Kept", "alive")] {
        let spec: NewAgent = serde_json::from_value(serde_json::json!({ "name": name })).unwrap();
        let agent = agents::create(store, &board, &company.id, spec)
            .await
            .unwrap();
        let woken = wakes::enqueue(
            store,
            &board,
            Wake {
                agent_id: agent.id.clone(),
                source: WakeSource::OnDemand,
                trigger_detail: Some("manual".into()),
                reason: None,
                payload: None,
                issue_id: None,
                idempotency_key: None,
            },
        )
        .await
        .unwrap();
        let run = woken.run.unwrap().id;
        assert!(runs::claim(store, &run, owner).await.unwrap().is_some());
        ids.push(run);
    }
    (ids.remove(0), ids.remove(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dead_instances_run_is_taken_over_once_and_a_live_ones_never() {
    let store = store().await;
    let lease = Duration::from_secs(30);
    let (dead, alive) = (instance("dead"), instance("alive"));
    instances::register(&store, &dead, lease).await.unwrap();
    instances::register(&store, &alive, lease).await.unwrap();
    let (lost_run, kept_run) = two_runs(&store).await;

    // While both hold their lease nothing is lost, for a survivor's sweep.
    for me in ["alive", "survivor"] {
        assert!(instances::lost_runs(&store, me, false)
            .await
            .unwrap()
            .is_empty());
    }
    // At its own start an instance takes back its previous incarnation's run.
    let starting = instances::lost_runs(&store, "dead", true).await.unwrap();
    assert_eq!(
        starting
            .iter()
            .map(|l| l.run_id.as_str())
            .collect::<Vec<_>>(),
        [lost_run.as_str()]
    );

    // `dead` stops: its run is lost; `alive`'s is not.
    instances::release(&store, &dead.id, &dead.incarnation)
        .await
        .unwrap();
    assert!(
        !instances::renew(&store, &dead.id, &dead.incarnation, lease)
            .await
            .unwrap()
    );
    let lost = instances::lost_runs(&store, "survivor", false)
        .await
        .unwrap();
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(lost[0].run_id, lost_run);
    assert_eq!(lost[0].owner.as_deref(), Some("dead"));
    assert_eq!(lost[0].owner_hostname.as_deref(), Some("host"));

    // Eight takeovers by two survivors race: exactly one wins.
    let races = (0..8).map(|n| {
        let store = store.clone();
        let run = lost_run.clone();
        let me = if n % 2 == 0 { "alive" } else { "survivor" };
        tokio::spawn(async move { instances::take_over(&store, &run, Some("dead"), me).await })
    });
    let mut won = 0;
    for race in races.collect::<Vec<_>>() {
        if race.await.unwrap().unwrap() {
            won += 1;
        }
    }
    assert_eq!(won, 1);
    assert!(instances::lost_runs(&store, "survivor", false)
        .await
        .unwrap()
        .is_empty());

    // The run `alive` drives stays its own; the one taken from `dead` is
    // what `dead` must let go of, were it still running it.
    let ids = vec![lost_run.clone(), kept_run.clone()];
    assert!(instances::not_mine(&store, "alive", &[kept_run.clone()])
        .await
        .unwrap()
        .is_empty());
    let not_dead = instances::not_mine(&store, "dead", &ids).await.unwrap();
    assert_eq!(not_dead.len(), 2, "both are another's now: {not_dead:?}");
    assert_eq!(instances::live_count(&store).await.unwrap(), 1);
}
