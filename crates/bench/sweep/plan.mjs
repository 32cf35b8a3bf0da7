// Arguments for each command, filled from the seed: positional arguments by name,
// mandatory options by flag, and per-command overrides where a name is not enough.
// Order: reads, then writes (some capture an id for the commands after them), then
// the destructive ones, so a delete does not take away what another command reads.
import { join } from "node:path";

const NONE = "00000000-0000-4000-8000-000000000000";

const DESTRUCTIVE = /(^| )(delete|revoke|terminate|remove|uninstall|logout|revoke-current|clear|demote|trigger:delete|comment:delete|work-product:delete|attachment:delete|label:delete|document:delete|provider-config:delete|archive)$/;
const WRITE = /(create|update|put|upload|set|sync|reset|install|enable|disable|import|apply|approve|reject|rotate|resolve|link|read|unread|release|checkout|comment|vote|lock|unlock|restore|accept|cancel|respond|claim|promote|demote|dismiss|invoke|wake|pause|resume|hire|login|run|fire|trigger|reload|reinstall|override|probe|ingest|transition|suggest|review|block|edit|open-conversation|prompt|export|execute|action|webhook|bridge|test|upgrade|rollback|decision|claude-login|local-cli|request|send|reply|scan-projects|preview|migrate|default|config:set|config:test|resubmit|request-revision|runtime-service|runtime-command|use|bulk|force-release|unarchive|tree-hold:release|promote|-key)/;

// Values for positional arguments, by the argument's name.
function positional(name, cmd, ids, work) {
  // Commands that get their own row: a delete never takes away what others use.
  const byCmd = {
    "company delete": { selector: ids.scratchCompanyId },
    "company archive": { companyId: ids.scratchCompanyId },
    "agent delete": { agentId: ids.agent3Id },
    "agent terminate": { agentId: ids.agent3Id },
    "issue delete": { issueId: ids.issue3Id },
    "goal delete": { goalId: ids.goal2Id },
    "project delete": { project: ids.project2Id },
    "secrets delete": { secretId: ids.secret2Id },
    "issue comment:delete": { commentId: ids.comment2Id },
    "approval reject": { approvalId: ids.approval2Id },
    "approval request-revision": { approvalId: ids.approval3Id },
    "approval resubmit": { approvalId: ids.approval3Id },
    "token agent revoke": { keyId: ids.agentKey2Id },
    "routine trigger:delete": { id: ids.trigger2Id },
    "issue checkout": { issueId: ids.issue2Id },
    "issue release": { issueId: ids.issue2Id },
    "issue force-release": { issueId: ids.issue2Id },
    "issue tree-state": { issueId: ids.issue4Id },
    "issue tree-preview": { issueId: ids.issue4Id },
    "issue tree-holds": { issueId: ids.issue4Id },
    "issue tree-hold:create": { issueId: ids.issue4Id },
    "issue tree-hold:get": { issueId: ids.issue4Id },
    "issue tree-hold:release": { issueId: ids.issue4Id },
    "adapter get": { type: "claude_local" },
    "adapter config-schema": { type: "claude_local" },
    "adapter ui-parser": { type: "claude_local" },
    "adapter models": { type: "claude_local" },
    "adapter detect-model": { type: "claude_local" },
    "llm agent-configuration:adapter": { adapterType: "claude_local" },
  };
  if (byCmd[cmd] && name in byCmd[cmd]) return byCmd[cmd][name];
  switch (name) {
    case "companyId":
    case "selector":
      return ids.companyId;
    case "idOrIdentifier":
      return ids.issueIdentifier ?? ids.issueId;
    case "issueId":
      return ids.issueId;
    case "commentId":
      return ids.commentId;
    case "approvalId":
      return ids.approvalId;
    case "agentId":
    case "agentRef":
    case "agent":
      return ids.agentId;
    case "project":
    case "projectId":
      return ids.projectId;
    case "goalId":
      return ids.goalId;
    case "runId":
      return ids.runId;
    case "labelId":
      return ids.labelId;
    case "key":
      return cmd.startsWith("issue document") ? "plan" : "sweep";
    case "revisionId":
      return cmd.startsWith("issue") ? ids.documentRevisionId : cmd.startsWith("routine") ? ids.routineRevisionId : ids.configRevisionId;
    case "routineId":
      return ids.routineId;
    case "publicId":
      return ids.triggerPublicId;
    case "secretId":
      return ids.secretId;
    case "skillId":
      return ids.skillId;
    case "skillRef":
      return ids.skillKey ?? ids.skillId;
    case "type":
    case "adapterType":
      return "process";
    case "action":
      return "start";
    case "keyId":
      return cmd.startsWith("token board") ? ids.boardKeyId : ids.agentKey2Id;
    case "userId":
      return ids.userId ?? "local-board";
    case "userSlug":
      return "local-board";
    case "memberId":
      return ids.memberId;
    case "inviteId":
      return ids.inviteId;
    case "token":
      return ids.inviteToken ?? "no-such-token";
    case "skillName":
      return "paperclip";
    case "query":
      return "review";
    case "prompt":
      return "Summarise the open tasks";
    case "agentApiKey":
      return ids.agentKey;
    case "profile":
      return "default";
    case "fromPathOrUrl":
      return join(work, "export");
    case "source":
      return join(work, "skill-src", "changelog");
    case "catalogRef":
      return "paperclip";
    case "attachmentId":
      return ids.attachmentId;
    case "workProductId":
      return ids.workProductId;
    case "interactionId":
      return ids.interactionId;
    case "holdId":
      return ids.holdId;
    case "assetId":
      return ids.assetId;
    case "configId":
      return ids.providerConfigId;
    case "pipeline":
      return "intake";
    case "caseId":
      return ids.caseId;
    case "id":
      // `trigger:create <id>` names the routine; the other `trigger:*` name a trigger.
      if (cmd.startsWith("routine")) return /trigger:(?!create)/.test(cmd) ? ids.triggerId : ids.routineId;
      if (cmd.startsWith("environment")) return ids.environmentId;
      if (cmd.startsWith("auth challenge")) return ids.challengeId;
      return ids.workspaceId;
    case "workspaceId":
      return ids.projectWorkspaceId;
    case "service":
      return "github";
    default:
      return undefined;
  }
}

// JSON bodies for --payload-json, by command.
function payloads(ids, work) {
  return {
    "company create": { name: "Payload Co" },
    "company update": { description: "Updated by the sweep" },
    "company branding:update": { description: "Rebranded by the sweep" },
    "company export:preview": { include: { company: true, agents: true, projects: true } },
    "company export:api": { include: { company: true, agents: true, projects: true } },
    "company import:preview": { source: { type: "inline", files: { "COMPANY.md": "---\nname: Imported\n---\n" } }, target: { mode: "new_company", newCompanyName: "Imported" } },
    "company import:apply": { source: { type: "inline", files: { "COMPANY.md": "---\nname: Imported\n---\n" } }, target: { mode: "new_company", newCompanyName: "Imported" } },
    "issue child:create": { title: "A subtask" },
    "issue work-product:create": { type: "pull_request", provider: "github", title: "PR #1", url: "https://example.com/pr/1" },
    "issue work-product:update": { title: "PR #1 (updated)" },
    "issue interaction:create": { kind: "ask_user_questions", payload: { version: 1, questions: [{ id: "q1", prompt: "Ship?", selectionMode: "single", options: [{ id: "yes", label: "Yes" }, { id: "no", label: "No" }] }] } },
    "issue tree-preview": { mode: "pause" },
    "issue tree-hold:create": { mode: "pause", reason: "sweep" },
    "issue feedback:vote": { targetType: "issue_comment", targetId: ids.agentCommentId ?? ids.commentId, vote: "up" },
    "agent create": { name: "Cy", role: "engineer", adapterType: "process", adapterConfig: { command: "true" } },
    "agent hire": { name: "Dee", role: "engineer", adapterType: "process", adapterConfig: { command: "true" } },
    "agent update": { title: "Chief" },
    "agent permissions:update": { canCreateAgents: true, canAssignTasks: true },
    // A folder of its own: the original reads the whole folder of the file as the bundle.
    "agent instructions-path:update": { path: join(work, "agent-home", "AGENTS.md"), adapterConfigKey: "instructionsFilePath" },
    "agent instructions-bundle:update": { mode: "managed" },
    "activity create": { actorType: "system", actorId: "sweep", action: "sweep.note", entityType: "company", entityId: ids.companyId, details: {} },
    "cost event:create": { agentId: ids.agentId, provider: "anthropic", model: "claude-sonnet", inputTokens: 10, outputTokens: 5, costCents: 1, occurredAt: new Date().toISOString() },
    "finance event:create": { eventKind: "credit_purchase", direction: "credit", biller: "anthropic", amountCents: 100, occurredAt: new Date().toISOString() },
    "budget policy:upsert": { scopeType: "company", scopeId: ids.companyId, amount: 10000, windowKind: "calendar_month_utc" },
    "budget company:update": { budgetMonthlyCents: 10000 },
    "budget agent:update": { budgetMonthlyCents: 5000 },
    "workspace update": { name: "ws" },
    "environment create": { name: "Local", driver: "local", config: {} },
    "environment update": { name: "Local 2" },
    "environment probe-config": { driver: "local", config: {} },
    "project-workspace create": { name: "main", cwd: join(work, "repo"), isPrimary: true },
    "project-workspace update": { name: "main2" },
    "profile update": { name: "Board" },
    "invite create": { allowedJoinTypes: "both" },
    "invite accept": { requestType: "agent", agentName: "Joiner", adapterType: "process" },
    "member update": { status: "active" },
    "member role-and-grants": { membershipRole: "member", grants: [] },
    "member permissions": { grants: [] },
    "admin user company-access:update": { companyIds: [ids.companyId] },
    "instance settings:general:update": {},
    "instance settings:experimental:update": {},
    "sidebar preferences:update": { orderedIds: [] },
    "sidebar project-preferences:update": { orderedIds: [] },
    "inbox dismiss": { itemKey: `approval:${ids.approvalId}` },
    "openclaw invite-prompt": {},
    "routine create": { title: "Daily digest", assigneeAgentId: ids.agentId, projectId: ids.projectId },
    "routine update": { description: "Updated by the sweep" },
    "routine trigger:create": { kind: "schedule", cronExpression: "0 8 * * *" },
    "routine trigger:update": { enabled: true },
    "adapter install": { packageName: "paperclip-adapter-none" },
    "adapter update": { disabled: false },
    "adapter override": { paused: false },
    "skill create": { name: "triage", slug: "triage", markdown: "---\nname: triage\ndescription: Triage tasks\n---\n\n# Triage\n" },
    "skill import": { source: "https://github.com/paperclipai/paperclip" },
    "skill scan-projects": {},
    "skill file:update": { path: "SKILL.md", content: "---\nname: release-notes\ndescription: Write release notes\n---\n\n# Release notes v2\n" },
    "secrets update": { description: "Updated by the sweep" },
    "secrets provider-config:create": { provider: "local_encrypted", displayName: "Local" },
    "secrets provider-config:discovery-preview": { provider: "local_encrypted" },
    "secrets provider-config:update": { displayName: "Local 2" },
    "secrets remote-import:preview": { providerConfigId: ids.providerConfigId ?? "00000000-0000-4000-8000-000000000000" },
    "secrets remote-import": { providerConfigId: ids.providerConfigId ?? "00000000-0000-4000-8000-000000000000", items: [] },
    "plugin local-folder:set": { path: "/tmp" },
    "auth challenge create": { command: "paperclipai auth login" },
  };
}

// Ids a write command hands to later commands.
const CAPTURE = {
  "issue attachment:upload": (o, ids) => (ids.attachmentId = o.id ?? o.attachment?.id),
  "issue work-product:create": (o, ids) => (ids.workProductId = o.id),
  "issue interaction:create": (o, ids) => (ids.interactionId = o.id),
  "issue tree-hold:create": (o, ids) => (ids.holdId = o.hold?.id ?? o.id),
  "environment create": (o, ids) => (ids.environmentId = o.id),
  "invite create": (o, ids) => {
    ids.inviteId = o.id;
    ids.inviteToken = o.token;
  },
  "token board create": (o, ids) => (ids.boardKeyId = o.id ?? o.key?.id),
  "secrets provider-config:create": (o, ids) => (ids.providerConfigId = o.id),
  "project-workspace create": (o, ids) => (ids.projectWorkspaceId = o.id),
  "asset image:upload": (o, ids) => (ids.assetId = o.assetId ?? o.id),
  "pipelines ingest": (o, ids) => (ids.caseId = o.id ?? o.case?.id),
  "auth challenge create": (o, ids) => {
    ids.challengeId = o.id ?? o.challenge?.id;
    ids.challengeToken = o.token ?? o.challengeSecret ?? o.secret;
  },
  "pipelines create": (o, ids) => (ids.pipelineId = o.id),
  "environment list": (o, ids) => (ids.environmentId ??= (Array.isArray(o) ? o : o.environments ?? [])[0]?.id),
  "profile session": (o, ids) => (ids.userId = o.user?.id ?? o.userId ?? ids.userId),
};
// Producers run before the other writes.
const PRODUCERS = new Set(Object.keys(CAPTURE).filter((k) => !["profile session", "environment list"].includes(k)));
// Arguments only a producer's capture fills: their commands run after the producers.
const CAPTURED = new Set(["attachmentId", "workProductId", "interactionId", "holdId", "assetId", "configId", "caseId", "inviteId", "token", "pipeline"]);
// Order within the writes where one needs another's effect.
const PHASE = {
  "agent instructions-bundle:update": 1.5,
  "agent instructions-file:put": 1.6,
  "agent instructions-file:get": 1.7,
  "agent instructions-path:update": 1.4, // points the agent at a file of its own: before the managed bundle
  "routine revision:restore": 3.5, // restoring a revision drops triggers made after it
  "agent config-revision:rollback": 3.5,
};

// Options beyond the mandatory ones (or whose value a flag name does not tell).
function extraOptions(name, ids, work, base) {
  const o = {
    "run watchdog-decision": ["--decision", "continue", "--reason", "sweep"],
    "heartbeat run": ["--timeout-ms", "20000"],
    "issue update": ["--priority", "high"],
    "issue recovery:resolve": ["--outcome", "restored", "--source-issue-status", "todo"],
    "issue checkout": ["--agent-id", ids.agent2Id],
    "issue document:put": ["--title", "Plan", "--format", "markdown", "--body", "# Plan\n\nShip it soon.", ...(ids.documentRevisionId ? ["--base-revision-id", ids.documentRevisionId] : [])],
    "invite accept": ["--payload-json", JSON.stringify({ requestType: "agent", agentName: "Joiner", adapterType: "process" })],
    "routine trigger:create": ["--payload-json", JSON.stringify({ kind: "schedule", cronExpression: "0 8 * * *" })],
    "auth challenge get": ["--token", ids.challengeToken ?? "none"],
    "auth challenge approve": ["--token", ids.challengeToken ?? "none"],
    "auth challenge cancel": ["--token", ids.challengeToken ?? "none"],
    "pipelines guidance put": ["--body", "Triage within a day."],
    "pipelines case resolve-suggestion": ["--suggestion", NONE, "--dismiss"],
    "pipelines case review": ["--expected-version", "1", "--approve"],
    "issue interaction:respond": ["--answers-json", JSON.stringify([{ questionId: "q1", optionIds: ["yes"] }])],
    "issue attachment:upload": ["--file", join(work, "note.txt")],
    "issue label:create": ["--name", "feature", "--color", "#0e8a16"],
    "agent inbox-mine": ["--user-id", ids.userId ?? "local-board"],
    "agent skills:sync": ["--desired-skills", ids.skillKey ?? "release-notes", "--mode", "replace"],
    "agent instructions-file:get": ["--path", "AGENTS.md"],
    "agent instructions-file:put": ["--path", "AGENTS.md", "--content", "# Ada\n\nYou run the company."],
    "agent instructions-file:delete": ["--path", "AGENTS.md"],
    "agent prompt": ["--no-wake"],
    "agent-prompt": ["--no-wake"],
    "board prompt": ["--agent", ids.agentId, "--no-wake"],
    "project create": ["--name", "Docs"],
    "project update": ["--description", "Updated by the sweep"],
    "goal create": ["--title", "Grow"],
    "goal update": ["--description", "Updated by the sweep"],
    "token agent create": ["--agent", ids.agentId],
    "token agent list": ["--agent", ids.agentId],
    "token agent revoke": ["--agent", ids.agentId],
    "token board create": ["--name", "sweep", "--ttl-days", "1"],
    "approval create": ["--type", "approve_ceo_strategy", "--payload", JSON.stringify({ plan: "Partner with agencies" })],
    "approval comment": ["--body", "Looks right"],
    "issue comment": ["--body", "Another comment"],
    "issue create": ["--title", "Made by the sweep"],
    "company export": ["--out", join(work, "export"), "--force"],
    "company import": ["--target", "new", "--new-company-name", "Imported Co", "--yes"],
    "company delete": ["--by", "id", "--yes", "--confirm", ids.scratchCompanyId],
    "join claim-key": ["--claim-secret", "nope"],
    "invite test-resolution": ["--url", base],
    "secrets create": ["--name", "NEW_TOKEN", "--value", "new-secret-value"],
    "secrets link": ["--name", "EXT", "--provider", "local_encrypted", "--external-ref", "ref"],
    "secrets rotate": ["--value", "rotated-secret-value"],
    "secrets delete": ["--confirm", ids.secret2Id],
    "skills agent sync": ["--mode", "replace", "--skill", ids.skillKey ?? "release-notes"],
    "skills create": ["--name", "checklists"],
    "asset image:upload": ["--file", join(work, "logo.png")],
    "asset logo:upload": ["--file", join(work, "logo.png")],
    "pipelines create": ["--key", "intake", "--name", "Intake"],
    "pipelines ingest": ["--title", "A case"],
    "pipelines set-automation": ["--stage", "new", "--routine", ids.routineId ?? NONE],
    "pipelines case transition": ["--to", "done", "--expected-version", "1"],
    "pipelines case suggest": ["--to", "done", "--rationale", "ready"],
    "pipelines case block": ["--by", ids.issueId],
    "managed-agent setup": ["--profile-key", "sweep", "--display-name", "Sweep", "--api-key-secret-id", ids.secretId ?? NONE],
    "context set": ["--api-base", base],
  };
  return o[name] ?? [];
}

// Commands an agent runs with its own key.
const AS_AGENT = new Set(["agent me", "agent inbox", "agent inbox-mine", "agent prompt", "connections search", "connections request", "email inboxes"]);

export function plan(commands, seeded, base, work) {
  const { ids } = seeded;
  const steps = commands.map((c, order) => {
    const name = c.name;
    const longs = new Set(c.options.map((o) => o.long));
    const env = { PAPERCLIP_COMPANY_ID: ids.companyId };
    if (AS_AGENT.has(name) && ids.agentKey) {
      env.PAPERCLIP_API_KEY = ids.agentKey;
      env.PAPERCLIP_AGENT_ID = ids.agentId;
    }
    const last = c.path.slice(1).join(" ") || c.path[0];
    const given = new Set(extraOptions(name, ids, work, base).filter((x) => String(x).startsWith("--")));
    let phase = DESTRUCTIVE.test(name) ? 3 : PRODUCERS.has(name) ? 1 : WRITE.test(last) ? 2 : 0;
    const late = c.args.some((a) => CAPTURED.has(a.name)) || (/^(environment|auth challenge) /.test(name) && c.args.some((a) => a.name === "id"));
    if (late && phase < 2) phase = 2;
    phase = PHASE[name] ?? phase;
    return {
      name,
      path: c.path,
      env,
      phase,
      order,
      capture: CAPTURE[name],
      // `auth login` waits for a person to approve it in a browser.
      timeoutMs: name === "auth login" ? 8000 : 30000,
      // Built when the command runs, with the ids producers captured before it.
      get argv() {
        return argvOf(c, ids, work, base);
      },
    };
  });
  steps.sort((a, b) => a.phase - b.phase || a.order - b.order);
  return steps;
}

function argvOf(c, ids, work, base) {
  const bodies = payloads(ids, work);
  const name = c.name;
  const argv = [...c.path];
  for (const a of c.args) {
    const v = positional(a.name, name, ids, work);
    if (v !== undefined) argv.push(String(v));
    else if (a.required) argv.push(NONE);
  }
  const extra = extraOptions(name, ids, work, base).map(String);
  const given = new Set(extra.filter((x) => x.startsWith("--")));
  for (const o of c.options.filter((o) => o.mandatory && !given.has(o.long))) {
    argv.push(o.long, mandatoryValue(o.long, name, ids, bodies, work));
  }
  argv.push(...extra);
  const longs = new Set(c.options.map((o) => o.long));
  if (longs.has("--json") && !given.has("--json")) argv.push("--json");
  if (longs.has("--yes") && !given.has("--yes")) argv.push("--yes");
  if (longs.has("--api-base") && name !== "context set") argv.push("--api-base", base);
  if (AS_AGENT.has(name) && ids.agentKey && longs.has("--api-key")) argv.push("--api-key", ids.agentKey);
  return argv;
}

function mandatoryValue(flag, name, ids, bodies, work) {
  switch (flag) {
    case "--company-id":
      return ids.companyId;
    case "--payload-json":
      return JSON.stringify(bodies[name] ?? {});
    case "--agent-id":
    case "--agent":
      return ids.agentId;
    case "--title":
      return "Made by the sweep";
    case "--name":
      return "sweep";
    case "--body":
      return "A comment from the sweep";
    case "--file":
      return join(work, "note.txt");
    case "--out":
      return join(work, "out");
    case "--path":
      return "AGENTS.md";
    case "--mode":
      return "replace";
    default:
      return "sweep";
  }
}
