//! Agent Chat: a conversation between one person and one agent, kept as a
//! special task (upstream's "conversation" columns on the issue row). Here
//! are its words and pure rules: the state, the `/new` command, what a chat
//! turn's prompt says instead of a task description, and what a chat's
//! status may become.

use crate::issue::IssueStatus;
use crate::stored::stored_words as words;

words!(
    ConversationState,
    "conversation state",
    [Active = "active", Waiting = "waiting"]
);

/// The body that starts a fresh session: exactly `/new` (spaces around it
/// allowed, as a person may type them), nothing else.
pub fn is_reset(body: &str) -> bool {
    body.trim() == "/new"
}

/// A chat's title, by its agent.
pub fn title(agent_name: &str) -> String {
    format!("Chat with {agent_name}")
}

/// What a chat turn's prompt carries in place of a task description: reply
/// to the person on this chat; real work goes into ordinary tasks.
pub fn directive(chat_identifier: &str, person: &str) -> String {
    format!(
        "This is a chat ({chat_identifier}) with {person}, not a task to carry out. \
         Read the newest messages and answer {person} in one comment on {chat_identifier} \
         (your agent key and run id, as for any comment). Keep it short and direct.\n\
         When the conversation asks for real work, do not do it inside the chat: create an \
         ordinary task (POST /api/companies/{{companyId}}/issues with a projectId, status \
         todo, assigned as fits) and name it by its identifier in your reply. Never create \
         subtasks of the chat ({chat_identifier}) and never change its status or assignee."
    )
}

/// Whether `to` is a status a chat may take: it never closes (done or
/// cancelled); it is parked for the person (`in_review`) or worked on.
pub fn status_allowed(to: IssueStatus) -> bool {
    !matches!(to, IssueStatus::Done | IssueStatus::Cancelled)
}

/// Where a chat goes after its agent's turn: parked for the person when the
/// agent answered in that turn (and the person has not written again since),
/// else still active.
pub fn after_turn(
    agent_replied: bool,
    person_wrote_again: bool,
) -> (IssueStatus, ConversationState) {
    if agent_replied && !person_wrote_again {
        (IssueStatus::InReview, ConversationState::Waiting)
    } else {
        (IssueStatus::InProgress, ConversationState::Active)
    }
}

/// A task's title from a chat message: its first non-empty line, without
/// Markdown heading marks, cut at 120 characters.
pub fn task_title(message: &str) -> String {
    let line = message
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("Task from chat");
    let mut title: String = line.chars().take(120).collect();
    if line.chars().count() > 120 {
        title.push('…');
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stored::Stored;

    #[test]
    fn only_exactly_new_resets() {
        assert!(is_reset("/new"));
        assert!(is_reset("  /new\n"));
        assert!(!is_reset("/new please"));
        assert!(!is_reset("/New"));
        assert!(!is_reset("new"));
    }

    #[test]
    fn states_read_back_strictly() {
        assert_eq!(
            ConversationState::from_stored("waiting"),
            Some(ConversationState::Waiting)
        );
        assert_eq!(
            ConversationState::from_stored("active"),
            Some(ConversationState::Active)
        );
        assert_eq!(ConversationState::from_stored("idle"), None);
    }

    #[test]
    fn a_chat_never_closes() {
        assert!(!status_allowed(IssueStatus::Done));
        assert!(!status_allowed(IssueStatus::Cancelled));
        assert!(status_allowed(IssueStatus::InReview));
        assert!(status_allowed(IssueStatus::InProgress));
    }

    #[test]
    fn a_reply_parks_the_chat_unless_the_person_wrote_again() {
        assert_eq!(
            after_turn(true, false),
            (IssueStatus::InReview, ConversationState::Waiting)
        );
        assert_eq!(
            after_turn(true, true),
            (IssueStatus::InProgress, ConversationState::Active)
        );
        assert_eq!(
            after_turn(false, false),
            (IssueStatus::InProgress, ConversationState::Active)
        );
    }

    #[test]
    fn the_directive_names_the_chat_and_forbids_subtasks() {
        let d = directive("ACM-7", "Ada");
        assert!(d.contains("ACM-7"));
        assert!(d.contains("Ada"));
        assert!(d.contains("ordinary task"));
        assert!(d.contains("Never create subtasks"));
        assert!(d.contains("/api/companies/{companyId}/issues"));
    }

    #[test]
    fn a_task_title_is_the_first_line() {
        assert_eq!(task_title("\n# Fix login\nmore"), "Fix login");
        assert_eq!(task_title("   \n"), "Task from chat");
        assert_eq!(task_title(&"x".repeat(130)).chars().count(), 121);
        assert_eq!(title("Coder"), "Chat with Coder");
    }
}
