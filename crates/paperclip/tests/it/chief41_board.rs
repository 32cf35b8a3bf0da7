//! The onboarding chief in the board (issue 41): `tests/browser/chief41.mjs`
//! starts the example chief on an empty company, writes a goal in the chat,
//! approves the plan card, accepts the suggested tasks and finds them, by
//! identifier, in the chief's reply and on the Tasks page.

use crate::common;

use std::time::Duration;

use common::TestServer;

#[tokio::test(flavor = "multi_thread")]
async fn a_person_starts_with_a_chief_of_staff() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start().await;
    common::browser::run("chief41", &server.base, Duration::from_secs(120)).await;
}
