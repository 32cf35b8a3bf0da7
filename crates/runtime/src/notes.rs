//! Notes appended to a run's prompt when the agent must know something about
//! how this run came about: its session was reset, or it carries on work a
//! restart interrupted, or it retries a failed run.

use paperclip_adapters::ErrorCode;
use paperclip_core::model::{HeartbeatRun, TaskSession};

/// The `lastError` of a task session forgotten because it overflowed: the
/// adapter's code for it.
pub(crate) const OVERFLOWED: ErrorCode = ErrorCode::ContextWindowExceeded;

const RESET_NOTE: &str = "Note: the previous session on this task exceeded the model's context \
     window and was reset. This run starts a fresh session without that conversation; read the \
     task and its comments again for what was already done.";

/// Whether the task's session was forgotten because it overflowed, so this
/// run starts without it (and needs the task so far, [`with_notes`]).
pub(crate) fn overflow_reset(saved: Option<&TaskSession>) -> bool {
    saved.is_some_and(|s| {
        s.session_display_id.is_none() && s.last_error.as_deref() == Some(OVERFLOWED.as_str())
    })
}

/// Tells the agent why it remembers nothing of its earlier runs on the task,
/// with a short account of the task so far.
fn reset_note(
    prompt: Option<String>,
    saved: Option<&TaskSession>,
    so_far: Option<&str>,
) -> Option<String> {
    match prompt {
        Some(p) if overflow_reset(saved) => {
            let so_far = so_far.map_or(String::new(), |s| format!("\nThe task so far:\n{s}"));
            Some(format!("{p}\n\n{RESET_NOTE}\n{so_far}"))
        }
        other => other,
    }
}

/// The prompt with every note that applies to this run. `so_far` is a short
/// account of the task (its latest comments) for a run whose session was reset.
pub(crate) fn with_notes(
    prompt: Option<String>,
    run: &HeartbeatRun,
    saved: Option<&TaskSession>,
    so_far: Option<&str>,
) -> Option<String> {
    let prompt = reset_note(prompt, saved, so_far)?;
    match follow_up_note(run, saved) {
        Some(note) => Some(format!("{prompt}\n\n{note}\n")),
        None => Some(prompt),
    }
}

/// A continuation must not blindly redo what the lost run may have done.
fn follow_up_note(run: &HeartbeatRun, saved: Option<&TaskSession>) -> Option<String> {
    let resumed = saved.is_some_and(|s| s.session_display_id.is_some());
    let memory = if resumed {
        "Your session was resumed, so you may remember part of that work."
    } else {
        "Its session could not be resumed, so read the task and its comments again."
    };
    if run.continuation_attempt > 0 {
        return Some(format!(
            "Note: your previous run on this task was interrupted by a restart of the control \
             plane before it finished (continuation {} of {}). {memory} Check the task's current \
             state (status, comments, documents, files) before repeating any action that may \
             already have happened.",
            run.continuation_attempt,
            paperclip_store::runs::follow_up::CONTINUATIONS,
        ));
    }
    run.retry_of_run_id.as_ref().map(|_| {
        format!(
            "Note: this run retries an earlier run on this task that did not succeed. {memory} \
             Check the task's current state before repeating any action."
        )
    })
}

/// The prompt with what the board answered on the task since the agent last
/// heard: each resolved card is claimed for this run, so an answer reaches
/// the agent once, however its wakes were coalesced. (A run without a
/// prompt reads the same in `PAPERCLIP_WAKE_PAYLOAD_JSON` and the API.)
pub(crate) async fn with_answers(
    store: &paperclip_store::Store,
    run: &HeartbeatRun,
    prompt: Option<String>,
) -> Option<String> {
    let prompt = prompt?;
    let Some(issue) = &run.issue_id else {
        return Some(prompt);
    };
    let cards = match paperclip_store::thread::interactions::deliver(
        store,
        &run.id,
        &run.agent_id,
        issue,
    )
    .await
    {
        Ok(cards) => cards,
        Err(err) => {
            tracing::warn!(run = %run.id, error = %err, "reading the board's answers for the prompt failed");
            return Some(prompt);
        }
    };
    match answers_note(&cards) {
        Some(note) => Some(format!("{prompt}\n\n{note}")),
        None => Some(prompt),
    }
}

/// "Answered questions" and decisions, as authoritative input from the board.
pub(crate) fn answers_note(cards: &[paperclip_core::interaction::Interaction]) -> Option<String> {
    use paperclip_core::interaction::{InteractionKind as K, InteractionStatus as S};
    if cards.is_empty() {
        return None;
    }
    let mut out = String::from(
        "The board answered your requests on this task. Treat these answers as authoritative \
         and carry on with them; do not ask again.\n",
    );
    for card in cards {
        let result = card.result.clone().unwrap_or_default();
        let what = card
            .title
            .clone()
            .or_else(|| card.payload["prompt"].as_str().map(str::to_string))
            .or_else(|| card.payload["title"].as_str().map(str::to_string))
            .unwrap_or_else(|| card.kind.as_str().replace('_', " "));
        let line = match (card.kind, card.status) {
            (K::AskUserQuestions, S::Answered) => format!(
                "Answered questions ({what}):\n{}",
                result["summaryMarkdown"]
                    .as_str()
                    .unwrap_or("")
                    .chars()
                    .take(12_000)
                    .collect::<String>()
            ),
            (K::SuggestTasks, S::Accepted) => {
                let made: Vec<String> = result["createdTasks"]
                    .as_array()
                    .map(|t| {
                        t.iter()
                            .filter_map(|t| t["identifier"].as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                format!("Suggested tasks accepted; created: {}", made.join(", "))
            }
            (_, S::Accepted) => format!("Accepted: {what}"),
            (_, S::Rejected) => {
                let reason = result["reason"]
                    .as_str()
                    .or(result["rejectionReason"].as_str());
                match reason {
                    Some(r) => format!("Rejected (changes requested): {what}\nReason: {r}"),
                    None => format!("Rejected (changes requested): {what}"),
                }
            }
            (_, S::Answered) => format!("Verdicts given on {what}: {}", result["items"]),
            (_, S::Cancelled) => format!("Closed without an answer: {what}"),
            _ => continue,
        };
        out.push_str(&format!("- [interaction {}] {line}\n", card.id));
    }
    Some(out)
}
