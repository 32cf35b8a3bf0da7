//! The original's keys we do not serve yet, each with its reason (see
//! `compat_shapes_contract.rs`). A gap names keys by their last path
//! segment (`logSha256` anywhere), or by a whole path when it starts with
//! `$`, on the listed steps only (none listed: any step).

pub struct Gap {
    pub steps: &'static [&'static str],
    pub keys: &'static [&'static str],
    pub reason: &'static str,
}

const fn gap(
    steps: &'static [&'static str],
    keys: &'static [&'static str],
    reason: &'static str,
) -> Gap {
    Gap {
        steps,
        keys,
        reason,
    }
}

/// The key a difference's path ends in: `$.a[0].b` is `b`, `$.a[0]` is `a`.
fn last_key(path: &str) -> &str {
    let path = path.trim_end_matches("[0]");
    path.rsplit('.').next().unwrap_or(path)
}

pub fn index(step: &str, path: &str) -> Option<usize> {
    GAPS.iter().position(|g| {
        (g.steps.is_empty() || g.steps.contains(&step))
            && g.keys.iter().any(|k| {
                if k.starts_with('$') {
                    *k == path
                } else {
                    *k == last_key(path)
                }
            })
    })
}

pub fn reason(step: &str, path: &str) -> Option<&'static str> {
    index(step, path).map(|i| GAPS[i].reason)
}

const ISSUE_STEPS: &[&str] = &[
    "issue.get",
    "issue.list",
    "issue.heartbeat_context",
    "routine.get",
    "agent.me.inbox_lite",
];
const RUN_STEPS: &[&str] = &["run.get", "issue.runs", "agent.me.inbox_lite"];

pub const GAPS: &[Gap] = &[
    gap(
        &["routine.get"],
        &[
            "conversationAgentId",
            "conversationUserId",
            "conversationState",
            "conversationSessionGeneration",
            "conversationBoundaryCommentId",
        ],
        "a routine's active task is never a chat: its summary leaves the chat keys out",
    ),
    gap(
        ISSUE_STEPS,
        &[
            "originFingerprint",
            "originIdentityContextId",
            "continuationIdentityContextId",
            "harnessKind",
            "executionAgentNameKey",
            "lastStatusDecisionId",
        ],
        "upstream's issue identity contexts, harnesses and status decisions: not implemented",
    ),
    gap(
        ISSUE_STEPS,
        &[
            "activeRecoveryAction",
            "scheduledRetry",
            "successfulRunHandoff",
            "executionBlocker",
            "unblockDescriptor",
            "blockedTransitionAt",
            "blockedOwnerNotifiedAt",
            "watchdog",
        ],
        "upstream's recovery rollups on a task (recovery actions, scheduled retries, run handoffs, unblock descriptors, watchdog): not computed yet",
    ),
    gap(
        ISSUE_STEPS,
        &[
            "executionWorkspaceId",
            "executionWorkspacePreference",
            "executionWorkspaceSettings",
            "projectWorkspaceId",
            "currentExecutionWorkspace",
            "assigneeAdapterOverrides",
            "reviewPolicy",
            "hiddenAt",
            "originId",
            "originRunId",
            "ancestors",
            "externalChannelBinding",
            "legacyPlanDocument",
            "linkedCases",
            "mentionedProjects",
            "referencedIssueIdentifiers",
            "relatedWork",
            "workProducts",
            "assigneeUserId",
            "attachments",
            "continuationSummary",
            "planReviewContext",
            "documentReviewContext",
        ],
        "upstream's per-task workspace records, adapter overrides, review policies, channels, cases and cross-references: not on the task answer here (worktrees and work products have their own routes)",
    ),
    gap(
        &["routine.get"],
        &[
            "companyId",
            "projectId",
            "goalId",
            "parentId",
            "description",
            "statusVersion",
            "workMode",
            "assigneeAgentId",
            "checkoutRunId",
            "executionRunId",
            "executionLockedAt",
            "createdByAgentId",
            "createdByUserId",
            "issueNumber",
            "originKind",
            "requestDepth",
            "billingCode",
            "executionPolicy",
            "executionState",
            "monitorNextCheckAt",
            "monitorWakeRequestedAt",
            "monitorLastTriggeredAt",
            "monitorAttemptCount",
            "monitorNotes",
            "monitorScheduledBy",
            "startedAt",
            "completedAt",
            "cancelledAt",
            "createdAt",
            "sourceTrust",
            "$.activeIssue.responsibleUserId",
        ],
        "a routine's activeIssue is the task named (id, identifier, title, status, priority): the whole task is at /issues/{id}",
    ),
    gap(
        &["run.get"],
        &[
            "activeIdentityContextId",
            "identityHistory",
            "controllerBootId",
            "controllerLeaseExpiresAt",
            "executionStage",
            "executionControlDeadlineAt",
            "executionStatusDeliveryId",
            "runnerProfileJson",
            "runnerInstanceId",
            "nativeSessionId",
            "nativeIssueId",
            "nativePhase",
            "nativePhaseUpdatedAt",
            "driverKind",
            "driverVersion",
            "completionContractId",
            "completionContractSha256",
            "currentStatusMessage",
            "currentStatusUpdatedAt",
            "currentToolName",
            "lastAssistantSnippet",
            "lastEventAt",
        ],
        "upstream's run controller, native runtimes and identity contexts: we run one in-process executor (the run's status line is at /heartbeat-runs/{id}/status)",
    ),
    gap(
        RUN_STEPS,
        &[
            "issueCommentStatus",
            "issueCommentSatisfiedByCommentId",
            "issueCommentRetryQueuedAt",
            "outputSilence",
            "execution",
            "retryExhaustedReason",
            "responsibleUserId",
            "environment",
            "environmentLease",
            "contextCommentId",
            "agentId",
            "createdAt",
            "finishedAt",
            "invocationSource",
            "triggerDetail",
        ],
        "upstream's run supervision (comment duty, silence watch, recovery phases, environment leases): not implemented; inbox-lite's activeRun names the run by id and status only",
    ),
    gap(
        &["run.get"],
        &[
            "$.contextSnapshot.allowDeliverableWork",
            "$.contextSnapshot.allowDocumentUpdates",
            "$.contextSnapshot.executionContinuation",
            "$.contextSnapshot.executionIdentityRunId",
            "$.contextSnapshot.executionWorkspaceId",
            "$.contextSnapshot.githubAuthenticationMode",
            "$.contextSnapshot.missingIssueCommentForRunId",
            "$.contextSnapshot.paperclipContinuationSummary",
            "$.contextSnapshot.paperclipEnvironment",
            "$.contextSnapshot.paperclipHarnessCheckedOut",
            "$.contextSnapshot.paperclipIssue",
            "$.contextSnapshot.paperclipScratch",
            "$.contextSnapshot.paperclipTaskMarkdown",
            "$.contextSnapshot.paperclipTaskMarkdownCompact",
            "$.contextSnapshot.paperclipWake",
            "$.contextSnapshot.paperclipWorkspace",
            "$.contextSnapshot.paperclipWorkspaces",
            "$.contextSnapshot.projectId",
            "$.contextSnapshot.recoveryIntent",
            "$.contextSnapshot.resumeRequiresNormalModel",
            "$.contextSnapshot.retryOfRunId",
            "$.contextSnapshot.retryReason",
            "$.contextSnapshot.source",
        ],
        "contextSnapshot holds what our runtime hands the agent; upstream's prompt material and wake bookkeeping are not in it",
    ),
    gap(
        &["run.events"],
        &[
            "$[0].id",
            "color",
            "protocolSchemaVersion",
            "sourceEventId",
            "sourceInstanceId",
            "sourcePayloadSha256",
            "sourceSeq",
        ],
        "run events are identified by UUID here, by a serial number upstream (seq orders both; never renumbered); upstream's event relay provenance: not implemented",
    ),
    gap(
        &["health"],
        &["nativeRecovery"],
        "upstream's native runner and its restart recovery states: we have none; our restart recovery settles each lost run at once, as upstream's generic orphan reaper does, which its health does not report either",
    ),
    gap(
        &["runs.live", "run.workspace_operations"],
        &["$"],
        "timing and setup: upstream listed the routine's run while it ran and a workspace preparation per run (a process agent here runs in its cwd with no workspace step)",
    ),
];
