//! What the activity log records. Every entry Paperclip writes names one of
//! these actions and entity kinds, so a misspelt action is a compile error,
//! not a row no filter finds. The log itself keeps text: the board may post
//! entries of its own (`POST /api/companies/{id}/activity`, free-form as
//! upstream's), so readers parse what they need with [`Action::parse`].

macro_rules! vocabulary {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($variant,)*
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

vocabulary! {
    /// An action Paperclip writes to the activity log.
    Action {
        AgentBudgetUpdated = "agent.budget_updated",
        AgentConfigRolledBack = "agent.config_rolled_back",
        AgentCreated = "agent.created",
        AgentDeleted = "agent.deleted",
        AgentKeyCreated = "agent.key_created",
        AgentKeyRevoked = "agent.key_revoked",
        AgentPaused = "agent.paused",
        AgentResumed = "agent.resumed",
        AgentSessionReset = "agent.runtime_state.session_reset",
        AgentTerminated = "agent.terminated",
        AgentUpdated = "agent.updated",
        CompanySkillCreated = "company.skill_created", CompanySkillUpdated = "company.skill_updated", CompanySkillFileUpdated = "company.skill_file_updated", CompanySkillFileDeleted = "company.skill_file_deleted", CompanySkillsImported = "company.skills_imported", CompanySkillDeleted = "company.skill_deleted", CompanySkillVersionCreated = "company.skill_version_created", CompanySkillReset = "company.skill_reset", CompanySkillUpdateInstalled = "company.skill_update_installed", AgentSkillsSynced = "agent.skills_synced",
        AgentUsageLimited = "agent.usage_limited",
        ApprovalApproved = "approval.approved",
        ApprovalCancelled = "approval.cancelled",
        ApprovalCommentAdded = "approval.comment_added",
        ApprovalCreated = "approval.created",
        ApprovalIssueLinked = "approval.issue_linked",
        ApprovalIssueUnlinked = "approval.issue_unlinked",
        ApprovalRejected = "approval.rejected",
        ApprovalResubmitted = "approval.resubmitted",
        ApprovalRevisionRequested = "approval.revision_requested",
        AssetCreated = "asset.created",
        BoardKeyCreated = "board_api_key.created",
        BoardKeyRevoked = "board_api_key.revoked",
        BudgetHardStop = "budget.hard_stop",
        BudgetIncidentResolved = "budget.incident_resolved",
        BudgetMonthRollover = "budget.month_rollover",
        BudgetSoftAlert = "budget.soft_alert",
        CompanyArchived = "company.archived",
        CompanyBrandingUpdated = "company.branding_updated",
        CompanyBudgetUpdated = "company.budget_updated",
        CompanyCreated = "company.created",
        CompanyImported = "company.imported",
        CompanyUpdated = "company.updated",
        CostReported = "cost.reported",
        ExecutionWorkspaceArchived = "execution_workspace.archived",
        ExecutionWorkspaceCleanupFailed = "execution_workspace.cleanup_failed",
        ExecutionWorkspaceUpdated = "execution_workspace.updated",
        GoalCreated = "goal.created",
        GoalDeleted = "goal.deleted",
        GoalUpdated = "goal.updated",
        ModelServerCreated = "model_server.created",
        ModelServerDeleted = "model_server.deleted",
        ModelServerUpdated = "model_server.updated",
        HeartbeatCancelled = "heartbeat.cancelled",
        HeartbeatCoalesced = "heartbeat.coalesced",
        HeartbeatContinued = "heartbeat.continued",
        HeartbeatFinished = "heartbeat.finished",
        HeartbeatQueued = "heartbeat.queued",
        HeartbeatRecovered = "heartbeat.recovered",
        HeartbeatRetried = "heartbeat.retried",
        HeartbeatSkipped = "heartbeat.skipped",
        InboxDismissed = "inbox.dismissed",
        InboxRestored = "inbox.restored",
        IssueReadMarked = "issue.read_marked", IssueReadUnmarked = "issue.read_unmarked", IssueInboxArchived = "issue.inbox_archived", IssueInboxUnarchived = "issue.inbox_unarchived", AgentInstructionsPathUpdated = "agent.instructions_path_updated", AgentInstructionsFileUpdated = "agent.instructions_file_updated", AgentInstructionsFileDeleted = "agent.instructions_file_deleted",
        IssueTreeControlPreviewed = "issue.tree_control_previewed", IssueTreeHoldCreated = "issue.tree_hold_created", IssueTreeHoldReleased = "issue.tree_hold_released", IssueMonitorTriggered = "issue.monitor_triggered", IssueMonitorExhausted = "issue.monitor_exhausted", IssueMonitorScheduled = "issue.monitor_scheduled", IssueMonitorCleared = "issue.monitor_cleared", IssueWatchdogCreated = "issue.watchdog_created", IssueWatchdogUpdated = "issue.watchdog_updated", IssueWatchdogRemoved = "issue.watchdog_removed",
        InviteCreated = "invite.created",
        InviteRevoked = "invite.revoked",
        IssueAdminForceRelease = "issue.admin_force_release",
        IssueAttachmentAdded = "issue.attachment_added",
        IssueAttachmentRemoved = "issue.attachment_removed",
        IssueCheckedOut = "issue.checked_out",
        IssueCommentAdded = "issue.comment_added",
        IssueCommentDeleted = "issue.comment_deleted",
        IssueContextCompactionRequested = "issue.context_compaction_requested",
        IssueConversationOpened = "issue.conversation_opened",
        IssueConversationSessionStarted = "issue.conversation_session_started",
        IssueCreated = "issue.created",
        IssueDeleted = "issue.deleted",
        IssueDocumentCreated = "issue.document_created",
        IssueDocumentDeleted = "issue.document_deleted",
        IssueDocumentLocked = "issue.document_locked",
        IssueDocumentUnlocked = "issue.document_unlocked",
        IssueDocumentUpdated = "issue.document_updated",
        IssueReleased = "issue.released",
        IssueThreadInteractionAccepted = "issue.thread_interaction_accepted",
        IssueThreadInteractionAnswered = "issue.thread_interaction_answered",
        IssueThreadInteractionCancelled = "issue.thread_interaction_cancelled",
        IssueThreadInteractionCreated = "issue.thread_interaction_created",
        IssueThreadInteractionExpired = "issue.thread_interaction_expired",
        IssueThreadInteractionItemVerdictsSubmitted = "issue.thread_interaction_item_verdicts_submitted",
        IssueThreadInteractionRejected = "issue.thread_interaction_rejected",
        IssueThreadInteractionSkipped = "issue.thread_interaction_skipped",
        IssueThreadInteractionWithdrawn = "issue.thread_interaction_withdrawn",
        IssueUpdated = "issue.updated",
        IssueWakeLoopHeld = "issue.wake_loop_held",
        IssueWakeLoopReleased = "issue.wake_loop_released",
        IssueWorkProductCreated = "issue.work_product_created",
        IssueWorkProductDeleted = "issue.work_product_deleted",
        IssueWorkProductUpdated = "issue.work_product_updated",
        FolderCreated = "folder.created",
        FolderDeleted = "folder.deleted",
        FolderItemMoved = "folder.item_moved",
        FolderMoved = "folder.moved",
        FolderUpdated = "folder.updated",
        LabelCreated = "label.created",
        LabelDeleted = "label.deleted",
        MemberJoined = "member.joined",
        MemberReactivated = "member.reactivated",
        MemberRemoved = "member.removed",
        MemberRoleChanged = "member.role_changed",
        MemberSuspended = "member.suspended",
        ProjectBudgetUpdated = "project.budget_updated",
        ProjectCreated = "project.created",
        ProjectDeleted = "project.deleted",
        ProjectUpdated = "project.updated",
        ProjectWorkspaceCreated = "project.workspace_created",
        ProjectWorkspaceDeleted = "project.workspace_deleted",
        ProjectWorkspaceUpdated = "project.workspace_updated",
        RoutineCreated = "routine.created",
        RoutineRevisionCreated = "routine.revision_created",
        RoutineRevisionRestored = "routine.revision_restored",
        RoutineRunSkipped = "routine.run_skipped",
        RoutineRunTriggered = "routine.run_triggered",
        RoutineTriggerCreated = "routine.trigger_created",
        RoutineTriggerDeleted = "routine.trigger_deleted",
        RoutineTriggerSecretRotated = "routine.trigger_secret_rotated",
        RoutineTriggerUpdated = "routine.trigger_updated",
        RoutineUpdated = "routine.updated",
        SecretProposalCreated = "secret_proposal.created", SecretProposalApproved = "secret_proposal.approved", SecretProposalRejected = "secret_proposal.rejected", SecretProposalWithdrawn = "secret_proposal.withdrawn", SecretBindingCreated = "secret.binding_created", SecretAccessListed = "secret.access.listed", SecretValueRead = "secret.value.read",
        DecisionCreated = "decision.created", DecisionDecided = "decision.decided", DecisionDismissed = "decision.dismissed", DecisionCancelled = "decision.cancelled", DecisionExpired = "decision.expired", DecisionEffectExecuted = "decision.effect_executed", DecisionEffectFailed = "decision.effect_failed", DecisionEffectSkipped = "decision.effect_skipped",
        SecretCreated = "secret.created",
        SecretDeleted = "secret.deleted",
        SecretRotated = "secret.rotated",
        SecretUpdated = "secret.updated",
    }
}

vocabulary! {
    /// The kind of entity an entry is about.
    EntityType {
        Agent = "agent",
        Approval = "approval",
        Asset = "asset",
        Company = "company",
        CompanySkill = "company_skill", CompanySkillVersion = "company_skill_version",
        Decision = "decision",
        CostEvent = "cost_event",
        ExecutionWorkspace = "execution_workspace",
        Folder = "folder",
        Goal = "goal",
        HeartbeatRun = "heartbeat_run",
        Invite = "invite",
        Issue = "issue",
        Label = "label",
        ModelServer = "model_server",
        Project = "project",
        Routine = "routine",
        RoutineRun = "routine_run",
        RoutineTrigger = "routine_trigger",
        Secret = "secret",
        SecretProposal = "secret_proposal",
        User = "user",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_reads_back_as_itself_and_names_its_kind() {
        let mut seen = std::collections::HashSet::new();
        for action in Action::ALL {
            assert_eq!(Action::parse(action.as_str()), Some(*action));
            assert!(seen.insert(action.as_str()), "{action} twice");
            let (kind, verb) = action.as_str().split_once('.').expect("kind.verb");
            assert!(!kind.is_empty() && !verb.is_empty(), "{action}");
        }
        for kind in EntityType::ALL {
            assert_eq!(EntityType::parse(kind.as_str()), Some(*kind));
        }
        assert_eq!(Action::parse("issue.creatd"), None);
    }
}
