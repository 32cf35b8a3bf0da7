//! Agent Chat in the board (issue 41): `tests/browser/agent_chat.mjs` opens Chat
//! from the navigation, chats with a process agent whose reply streams in,
//! starts a fresh session with `/new`, and makes a message a task.

use crate::common;

use std::time::Duration;

use common::TestServer;

#[tokio::test(flavor = "multi_thread")]
async fn a_person_chats_with_an_agent_in_the_board() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start().await;
    common::browser::run("agent_chat", &server.base, Duration::from_secs(120)).await;
}
