//! Codes in words, for what a person reads: why an agent was woken, and what
//! an activity entry did. The board's pages and the CLI (which words the
//! API's JSON itself) share these, so a code reads the same everywhere.

use crate::activity::Action;

/// Why a run was woken, from its wake reason: "an @mention in a comment",
/// not `issue_comment_mentioned`. An unknown reason reads as its words.
pub fn wake_reason(reason: &str) -> String {
    let known = match reason {
        "issue_assigned" => "assigned a task",
        "issue_status_changed" => "its task was started or reopened",
        "issue_reopened_via_comment" => "a comment reopened its task",
        "issue_commented" => "a comment on its task",
        "issue_comment_mentioned" => "an @mention in a comment",
        "interaction_pending" => "a question card addressed to it",
        "heartbeat_timer" => "its heartbeat timer",
        "manual_invoke" | "manual" => "Run now (by hand)",
        "retry_failed_run" => "a retry of a failed run",
        "interrupted" => "a comment that interrupted its run",
        "wake_loop_released" => "held wakes released",
        "approval_approved" => "its request was approved",
        "approval_rejected" => "its request was rejected",
        "approval_revision_requested" => "a revision of its request was asked for",
        "routine_triggered" | "routine_run" => "a routine",
        _ => return reason.replace(['_', '.'], " "),
    };
    known.to_string()
}

/// Where a wake came from, when it has no reason.
pub fn wake_source(source: &str) -> &str {
    match source {
        "timer" => "its heartbeat timer",
        "assignment" => "an assignment",
        "on_demand" => "a request to run now",
        "automation" => "an automation",
        other => other,
    }
}

/// The "why" of a wake: its reason in words, else its source in words.
pub fn wake_why(source: Option<&str>, reason: Option<&str>) -> String {
    match (reason.filter(|r| !r.is_empty()), source) {
        (Some(r), _) => wake_reason(r),
        (None, Some(s)) => wake_source(s).to_string(),
        (None, None) => "unknown".to_string(),
    }
}

/// An adapter type as a person calls it: "Claude Code", not `claude_local`.
pub fn adapter(kind: &str) -> &str {
    match kind {
        "claude_local" => "Claude Code",
        "codex_local" => "Codex",
        "opencode_local" => "OpenCode",
        "gemini_local" => "Gemini CLI",
        "claude_k8s" => "Claude Code on Kubernetes",
        "opencode_k8s" => "OpenCode on Kubernetes",
        "process" => "local command",
        "http" => "HTTP endpoint",
        other => other,
    }
}

/// The kind of thing an entry is about, as a person calls it.
pub fn entity_noun(entity_type: &str) -> &str {
    match entity_type {
        "issue" => "task",
        "heartbeat_run" => "run",
        "cost_event" => "cost",
        "routine_run" | "routine_trigger" => "routine",
        "execution_workspace" => "workspace",
        "company_skill" | "company_skill_version" => "skill",
        "user" => "person",
        other => other,
    }
}

/// What an entry's actor did, as the verb before the thing it is about:
/// "Board *ran* routine Daily digest", "Coder *commented on* ACM-3".
/// Entries the board posted itself (free-form actions) have no verb here.
pub fn action_verb(action: Action) -> &'static str {
    use Action::*;
    match action {
        AgentBudgetUpdated | CompanyBudgetUpdated | ProjectBudgetUpdated => {
            "set the monthly budget of"
        }
        AgentConfigRolledBack => "rolled back the configuration of",
        AgentCreated => "added",
        AgentDeleted => "removed",
        AgentKeyCreated => "created an API key for",
        AgentKeyRevoked => "revoked an API key of",
        AgentPaused => "paused",
        AgentResumed => "resumed",
        AgentSessionReset => "reset the session of",
        AgentTerminated => "terminated",
        AgentUpdated => "updated",
        CompanySkillCreated => "created the skill",
        CompanySkillUpdated => "updated the skill",
        CompanySkillFileUpdated => "edited a file of the skill",
        CompanySkillFileDeleted => "deleted a file of the skill",
        CompanySkillsImported => "imported skills into",
        CompanySkillDeleted => "deleted the skill",
        CompanySkillVersionCreated => "made a version of a skill in",
        CompanySkillReset => "reset the skill",
        CompanySkillUpdateInstalled => "updated the skill",
        AgentSkillsSynced => "changed the skills of",
        AgentUsageLimited => "noted a usage limit of",
        ApprovalApproved => "approved",
        ApprovalCancelled => "cancelled",
        ApprovalCommentAdded => "commented on",
        ApprovalCreated => "requested",
        ApprovalIssueLinked => "linked a task to",
        ApprovalIssueUnlinked => "unlinked a task from",
        ApprovalRejected => "rejected",
        ApprovalResubmitted => "resubmitted",
        ApprovalRevisionRequested => "asked for a revision of",
        AssetCreated => "uploaded",
        BoardKeyCreated => "created a board API key for",
        BoardKeyRevoked => "revoked a board API key of",
        BudgetHardStop => "stopped work: the budget is spent for",
        BudgetIncidentResolved => "resolved a budget stop of",
        BudgetMonthRollover => "started a new budget month for",
        BudgetSoftAlert => "warned that the budget is nearly spent for",
        CompanyArchived => "archived",
        CompanyBrandingUpdated => "changed the name, description or logo of",
        CompanyCreated => "created",
        CompanyImported => "imported a package into",
        CompanyUpdated => "changed the settings of",
        CostReported => "reported a cost of",
        ExecutionWorkspaceArchived => "closed",
        ExecutionWorkspaceCleanupFailed => "could not clean up",
        ExecutionWorkspaceUpdated => "updated",
        GoalCreated | IssueCreated | LabelCreated | ProjectCreated | RoutineCreated
        | SecretCreated | InviteCreated | ModelServerCreated => "created",
        GoalDeleted | IssueDeleted | LabelDeleted | ProjectDeleted | SecretDeleted
        | ModelServerDeleted => "deleted",
        GoalUpdated | IssueUpdated | ProjectUpdated | RoutineUpdated | SecretUpdated
        | ModelServerUpdated => "edited",
        FolderCreated => "created",
        FolderUpdated => "edited",
        FolderMoved => "moved",
        FolderDeleted => "deleted",
        // The entry is about the routine filed.
        FolderItemMoved => "filed",
        HeartbeatCancelled => "cancelled",
        HeartbeatCoalesced => "merged a wake of",
        HeartbeatContinued => "continued",
        HeartbeatFinished => "finished",
        HeartbeatQueued => "woke",
        HeartbeatRecovered => "recovered",
        HeartbeatRetried => "retried",
        HeartbeatSkipped => "skipped a wake of",
        InboxDismissed => "dismissed from the inbox",
        InboxRestored => "restored to the inbox",
        IssueReadMarked => "read",
        IssueReadUnmarked => "marked unread",
        IssueInboxArchived => "archived from the inbox",
        IssueInboxUnarchived => "brought back to the inbox",
        AgentInstructionsPathUpdated => "set the instructions path of",
        AgentInstructionsFileUpdated => "edited the instructions of",
        AgentInstructionsFileDeleted => "deleted an instructions file of",
        InviteRevoked => "revoked",
        IssueAdminForceRelease => "force-released",
        IssueAttachmentAdded => "attached a file to",
        IssueAttachmentRemoved => "removed a file from",
        IssueCheckedOut => "started work on",
        IssueCommentAdded => "commented on",
        IssueContextCompactionRequested => "asked to compact the context of",
        IssueConversationOpened => "opened the chat",
        IssueConversationSessionStarted => "started a new session in",
        IssueCommentDeleted => "deleted a comment on",
        IssueDocumentCreated => "added a document to",
        IssueDocumentDeleted => "deleted a document of",
        IssueDocumentLocked => "locked a document of",
        IssueDocumentUnlocked => "unlocked a document of",
        IssueDocumentUpdated => "revised a document of",
        IssueReleased => "released",
        IssueThreadInteractionAccepted => "accepted a card on",
        IssueThreadInteractionAnswered => "answered a card on",
        IssueThreadInteractionCancelled => "cancelled a card on",
        IssueThreadInteractionCreated => "asked on",
        IssueThreadInteractionExpired => "let a card expire on",
        IssueThreadInteractionItemVerdictsSubmitted => "gave verdicts on a card on",
        IssueThreadInteractionRejected => "rejected a card on",
        IssueThreadInteractionSkipped => "skipped a card on",
        IssueThreadInteractionWithdrawn => "withdrew a card on",
        IssueWakeLoopHeld => "held repeated wakes on",
        IssueWakeLoopReleased => "released held wakes on",
        IssueWorkProductCreated => "added a work product to",
        IssueWorkProductDeleted => "removed a work product from",
        IssueWorkProductUpdated => "updated a work product of",
        MemberJoined => "joined",
        MemberReactivated => "reactivated",
        MemberRemoved => "removed",
        MemberRoleChanged => "changed the role of",
        MemberSuspended => "suspended",
        ProjectWorkspaceCreated => "added a workspace to",
        ProjectWorkspaceDeleted => "removed a workspace from",
        ProjectWorkspaceUpdated => "changed a workspace of",
        RoutineRevisionCreated => "saved a new revision of",
        RoutineRevisionRestored => "restored an earlier revision of",
        RoutineRunSkipped => "skipped a run of",
        RoutineRunTriggered => "ran",
        RoutineTriggerCreated => "added a trigger to",
        RoutineTriggerDeleted => "removed a trigger from",
        RoutineTriggerSecretRotated => "rotated the webhook secret of",
        RoutineTriggerUpdated => "changed a trigger of",
        SecretRotated => "rotated",
        IssueTreeControlPreviewed => "previewed a tree control of",
        IssueTreeHoldCreated => "put a hold on the tree of",
        IssueTreeHoldReleased => "released a hold on the tree of",
        IssueMonitorTriggered => "ran the monitor of",
        IssueMonitorExhausted => "ended the monitor of",
        IssueMonitorScheduled => "scheduled a monitor on",
        IssueMonitorCleared => "cleared the monitor of",
        IssueWatchdogCreated => "set a watchdog on",
        IssueWatchdogUpdated => "changed the watchdog of",
        IssueWatchdogRemoved => "removed the watchdog of",
        DecisionCreated => "asked the board to decide",
        DecisionDecided => "decided",
        DecisionDismissed => "dismissed the decision",
        DecisionCancelled => "withdrew the decision",
        DecisionExpired => "let expire the decision",
        DecisionEffectExecuted => "carried out a decision on",
        DecisionEffectFailed => "could not carry out a decision on",
        DecisionEffectSkipped => "skipped a decision on",
        SecretProposalCreated => "proposed the secret",
        SecretProposalApproved => "approved the secret proposal",
        SecretProposalRejected => "rejected the secret proposal",
        SecretProposalWithdrawn => "withdrew the secret proposal",
        SecretBindingCreated => "granted a secret to",
        SecretAccessListed => "listed the secrets of",
        SecretValueRead => "read the secret",
    }
}

/// A free-form action (one the board posted, unknown to [`Action`]) in
/// words: its last part, `deploy.finished` → "finished".
pub fn free_action(action: &str) -> String {
    action
        .rsplit('.')
        .next()
        .unwrap_or(action)
        .replace('_', " ")
}

/// Any action text in words: the verb of a known action, else [`free_action`].
pub fn action(action: &str) -> String {
    match Action::parse(action) {
        Some(a) => action_verb(a).to_string(),
        None => free_action(action),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wake_reasons_read_as_words() {
        assert_eq!(
            wake_reason("issue_comment_mentioned"),
            "an @mention in a comment"
        );
        assert_eq!(wake_reason("issue_assigned"), "assigned a task");
        assert_eq!(wake_reason("something_new"), "something new");
        assert_eq!(wake_why(Some("automation"), None), "an automation");
        assert_eq!(wake_why(Some("automation"), Some("")), "an automation");
        assert_eq!(
            wake_why(None, Some("heartbeat_timer")),
            "its heartbeat timer"
        );
    }

    #[test]
    fn every_action_has_a_verb_without_codes() {
        for a in Action::ALL {
            let v = action_verb(*a);
            assert!(
                !v.is_empty() && !v.contains('_') && !v.contains('.'),
                "{a}: {v}"
            );
        }
        assert_eq!(action("routine.run_triggered"), "ran");
        assert_eq!(action("deploy.went_out"), "went out");
    }
}
