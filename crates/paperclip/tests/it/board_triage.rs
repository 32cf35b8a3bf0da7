//! The board shows the work (issue 37): `tests/browser/board_triage.mjs`
//! checks the columns fit 1280 and 1920 px, Done folds, the rich cards (a
//! running agent's live step among them), lanes, "Me", and bulk changes on
//! the board and in the list with a refused move reported by identifier.

use crate::common;

use std::time::Duration;

use common::TestServer;

#[tokio::test(flavor = "multi_thread")]
async fn the_board_shows_the_work_and_changes_tasks_in_bulk() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start().await;
    common::browser::run("board_triage", &server.base, Duration::from_secs(120)).await;
}
