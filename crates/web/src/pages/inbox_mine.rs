//! The inbox's "Mine" section: the tasks that are the viewer's (created,
//! assigned or read by them), unread ones marked, each with Mark read and
//! Archive. An archived task leaves until it changes again (an agent may
//! archive one for the person, as upstream's skill does).

use maud::{html, Markup};
use paperclip_core::actor::LOCAL_BOARD_USER_ID;
use paperclip_core::issue::IssueStatus;
use paperclip_store::issues::inbox_state;

use crate::fmt::pill;

const STATUSES: &[IssueStatus] = &[
    IssueStatus::Backlog,
    IssueStatus::Todo,
    IssueStatus::InProgress,
    IssueStatus::InReview,
    IssueStatus::Blocked,
    IssueStatus::Done,
];
/// The section shows the newest changes; the rest stay a click away in Tasks.
const SHOWN: usize = 30;

pub async fn section(
    store: &paperclip_store::Store,
    cid: &str,
    user: &str,
    prefix: &str,
) -> paperclip_store::Result<Markup> {
    let items = inbox_state::mine(
        store,
        cid,
        user,
        STATUSES.to_vec(),
        user == LOCAL_BOARD_USER_ID,
    )
    .await?;
    let unread = items.iter().filter(|i| i.unread).count();
    Ok(html! {
        section data-mine { h2 { "Mine" @if unread > 0 { " " span.badge data-unread-count { (unread) " unread" } } }
            @if items.is_empty() { p.empty { "Nothing of yours left in the inbox." } }
            ul.tasklist { @for item in items.iter().take(SHOWN) {
                @let i = &item.issue;
                li data-mine-issue=(i.identifier) data-unread=[item.unread.then_some("true")] {
                    @if item.unread { span.dot title="Unread" aria-label="Unread" { "●" } " " }
                    a href={"/" (prefix) "/tasks/" (i.identifier)} {
                        span.ident { (i.identifier) } " "
                        @if item.unread { strong { (i.title) } } @else { (i.title) }
                    }
                    " " (pill(&i.status)) " "
                    @if item.unread {
                        button.small type="button" data-action="POST" data-url={"/api/issues/" (i.id) "/read"} data-body="{}" data-done="Read" { "Mark read" }
                    } @else {
                        button.small type="button" data-action="DELETE" data-url={"/api/issues/" (i.id) "/read"} data-done="Unread" { "Mark unread" }
                    }
                    " "
                    button.small type="button" data-action="POST" data-url={"/api/issues/" (i.id) "/inbox-archive"} data-body="{}" data-done="Archived" { "Archive" }
                }
            } }
        }
    })
}
