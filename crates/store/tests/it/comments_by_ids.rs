//! A run's wake comments are read in one query: in the order asked, a
//! deleted comment, one of another task and an unknown id left out, on both
//! engines.

use crate::common;

use common::store;

use paperclip_core::actor::Actor;
use paperclip_core::input::NewIssue;
use paperclip_store::{issues, thread::comments, Store};

async fn task(store: &Store, company: &str, title: &str) -> String {
    let input: NewIssue = serde_json::from_value(serde_json::json!({ "title": title })).unwrap();
    issues::create(store, &Actor::local_board(), company, input)
        .await
        .unwrap()
        .id
}

#[tokio::test]
async fn wake_comments_in_one_query_in_the_order_asked() {
    let store = store().await;
    let board = Actor::local_board();
    let company = common::company(&store, "Comments Co").await;
    let (one, other) = (
        task(&store, &company, "One").await,
        task(&store, &company, "Other").await,
    );
    let mut ids = Vec::new();
    for body in ["first", "second", "third"] {
        let c = comments::create(&store, &board, &one, body.into(), None)
            .await
            .unwrap();
        ids.push(c.id);
    }
    let elsewhere = comments::create(&store, &board, &other, "elsewhere".into(), None)
        .await
        .unwrap()
        .id;
    comments::delete(&store, &board, &one, &ids[1])
        .await
        .unwrap();
    let asked = [&ids[2], "no-such-comment", &elsewhere, &ids[1], &ids[0]];
    let asked: Vec<&str> = asked.iter().map(|s| s.as_ref()).collect();
    let found: Vec<String> = comments::by_ids(&store, &one, &asked)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.body)
        .collect();
    assert_eq!(found, ["third", "first"]);
    assert!(comments::by_ids(&store, &one, &[])
        .await
        .unwrap()
        .is_empty());
}
