//! The executor reads the briefs of every agent with queued runs in one
//! query: each id found once, unknown ids left out, on both engines.

use crate::common;

use common::store;

use paperclip_core::actor::Actor;
use paperclip_core::input::NewAgent;
use paperclip_store::org::agents;

#[tokio::test]
async fn briefs_of_many_agents_in_one_query() {
    let store = store().await;
    let board = Actor::local_board();
    let company = common::company(&store, "Briefs Co").await;
    let mut ids = Vec::new();
    for name in ["Ada", "Brian", "Cleo"] {
        let spec: NewAgent = serde_json::from_value(serde_json::json!({
            "name": name,
            "runtimeConfig": { "heartbeat": { "maxConcurrentRuns": 3 } },
        }))
        .unwrap();
        ids.push(
            agents::create(&store, &board, &company, spec)
                .await
                .unwrap()
                .id,
        );
    }
    let asked: Vec<&str> = vec![&ids[2], "no-such-agent", &ids[0]];
    let mut found: Vec<String> = agents::briefs(&store, &asked)
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.name)
        .collect();
    found.sort();
    assert_eq!(found, vec!["Ada", "Cleo"]);
    assert!(agents::briefs(&store, &[]).await.unwrap().is_empty());
}
