//! The design system holds on every main page of the sample company: no page
//! is wider than a 390 px phone, the menu opens there, and the colour theme
//! follows the system until a person picks Light or Dark, which a reload
//! keeps; a task made in the backlog with an assignee is not started until it
//! is moved to todo (tests/browser/design.mjs, which also makes
//! docs/screenshots).

use crate::common;

use std::time::Duration;

use common::{until, TestServer};

#[tokio::test(flavor = "multi_thread")]
async fn every_page_fits_a_phone_and_the_theme_is_the_persons_choice() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start_args(&["--sample"]).await;
    // The run page is on the tour: wait until the sample has one.
    until(60, "a run of the sample company", async || {
        let companies = server.ok_get("/api/companies").await;
        let cid = companies[0]["id"].as_str()?.to_string();
        let runs = server
            .ok_get(&format!("/api/companies/{cid}/heartbeat-runs"))
            .await;
        (!runs.as_array()?.is_empty()).then_some(())
    })
    .await;
    common::browser::run("design", &server.base, Duration::from_secs(180)).await;
}
