// The sweep's seed, through the API only (the original's routes), so any server gets the
// same company: a goal, a project, three agents (one with two API keys, one to delete),
// issues with comments, a document, a label, two approvals, a routine with a trigger, a
// secret, a skill, a run. A step the server refuses is recorded and skipped: the
// commands that need its id then fail on that server, as they should.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export async function seed(base, work) {
  const ids = {};
  const failed = [];
  const call = async (label, method, path, body) => {
    try {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (!res.ok) {
        failed.push(`${label} (${res.status})`);
        return null;
      }
      return text ? JSON.parse(text) : {};
    } catch (e) {
      failed.push(`${label} (${e.message})`);
      return null;
    }
  };
  const company = await call("company", "POST", "/api/companies", { name: "Sweep Co", description: "The sweep's company" });
  if (!company) throw new Error(`cannot create a company on ${base}: ${failed}`);
  ids.companyId = company.id;
  ids.issuePrefix = company.issuePrefix;
  const scratch = await call("scratch company", "POST", "/api/companies", { name: "Scratch Co" });
  ids.scratchCompanyId = scratch?.id;
  const c = `/api/companies/${ids.companyId}`;

  ids.goalId = (await call("goal", "POST", `${c}/goals`, { title: "Ship v1", level: "company" }))?.id;
  ids.goal2Id = (await call("goal 2", "POST", `${c}/goals`, { title: "Scratch goal" }))?.id;
  ids.projectId = (await call("project", "POST", `${c}/projects`, { name: "Website", goalIds: ids.goalId ? [ids.goalId] : [] }))?.id;
  ids.project2Id = (await call("project 2", "POST", `${c}/projects`, { name: "Scratch project" }))?.id;

  const agent = (name, role, extra = {}) =>
    call(`agent ${name}`, "POST", `${c}/agents`, {
      name,
      role,
      adapterType: "process",
      adapterConfig: { command: "true" },
      ...extra,
    });
  const ada = await agent("Ada", "ceo");
  ids.agentId = ada?.id;
  ids.agentName = ada?.name;
  ids.agent2Id = (await agent("Bob", "engineer", ada ? { reportsTo: ada.id } : {}))?.id;
  ids.agent3Id = (await agent("Temp", "engineer"))?.id;
  if (ids.agentId) {
    const key = await call("agent key", "POST", `/api/agents/${ids.agentId}/keys`, { name: "sweep" });
    ids.agentKey = key?.token ?? key?.key;
    ids.agentKey2Id = (await call("agent key 2", "POST", `/api/agents/${ids.agentId}/keys`, { name: "to revoke" }))?.id;
  }

  const issue = (title, extra = {}) => call(`issue ${title}`, "POST", `${c}/issues`, { title, ...extra });
  const i1 = await issue("Write the landing page", { projectId: ids.projectId, goalId: ids.goalId, description: "Hero, pricing, FAQ" });
  ids.issueId = i1?.id;
  ids.issueIdentifier = i1?.identifier;
  ids.issue2Id = (await issue("Fix the signup form", { projectId: ids.projectId, assigneeAgentId: ids.agent2Id, status: "todo" }))?.id;
  ids.issue3Id = (await issue("Scratch task"))?.id;
  ids.issue4Id = (await issue("Launch plan", { projectId: ids.projectId }))?.id;
  if (ids.issueId) {
    ids.commentId = (await call("comment", "POST", `/api/issues/${ids.issueId}/comments`, { body: "First pass looks good." }))?.id;
    ids.comment2Id = (await call("comment 2", "POST", `/api/issues/${ids.issueId}/comments`, { body: "A comment to delete." }))?.id;
    await call("document", "PUT", `/api/issues/${ids.issueId}/documents/plan`, { title: "Plan", format: "markdown", body: "# Plan\n\nShip it." });
    const revs = await call("document revisions", "GET", `/api/issues/${ids.issueId}/documents/plan/revisions`);
    const list = Array.isArray(revs) ? revs : revs?.revisions ?? revs?.items ?? [];
    ids.documentRevisionId = list.at(-1)?.id;
  }
  ids.labelId = (await call("label", "POST", `${c}/labels`, { name: "bug", color: "#d73a4a" }))?.id;

  const approval = (note) =>
    call(`approval ${note}`, "POST", `${c}/approvals`, {
      type: "approve_ceo_strategy",
      payload: { plan: note },
      issueIds: ids.issueId ? [ids.issueId] : [],
    });
  ids.approvalId = (await approval("Grow through content"))?.id;
  ids.approval2Id = (await approval("Grow through ads"))?.id;
  ids.approval3Id = (await approval("Grow through events"))?.id;

  const routine = await call("routine", "POST", `${c}/routines`, { title: "Weekly report", assigneeAgentId: ids.agentId, projectId: ids.projectId });
  ids.routineId = routine?.id;
  if (ids.routineId) {
    const t = await call("routine trigger", "POST", `/api/routines/${ids.routineId}/triggers`, { kind: "webhook" });
    ids.triggerId = t?.trigger?.id ?? t?.id;
    ids.triggerPublicId = t?.trigger?.publicId ?? t?.publicId;
    const t2 = await call("routine trigger 2", "POST", `/api/routines/${ids.routineId}/triggers`, { kind: "schedule", cronExpression: "0 9 * * 1" });
    ids.trigger2Id = t2?.trigger?.id ?? t2?.id;
    await call("routine update", "PATCH", `/api/routines/${ids.routineId}`, { description: "Every Monday" });
    const revs = await call("routine revisions", "GET", `/api/routines/${ids.routineId}/revisions`);
    const list = Array.isArray(revs) ? revs : revs?.revisions ?? [];
    ids.routineRevisionId = list.at(-1)?.id;
  }
  ids.secretId = (await call("secret", "POST", `${c}/secrets`, { name: "DEPLOY_TOKEN", value: "sweep-secret-value" }))?.id;
  ids.secret2Id = (await call("secret 2", "POST", `${c}/secrets`, { name: "OLD_TOKEN", value: "old-secret-value" }))?.id;

  const skill = await call("skill", "POST", `${c}/skills`, { name: "release-notes", slug: "release-notes", markdown: "---\nname: release-notes\ndescription: Write release notes\n---\n\n# Release notes\n" });
  ids.skillId = skill?.id;
  ids.skillKey = skill?.key ?? skill?.slug;

  // A run: wake Ada (a process agent running `true`).
  if (ids.agentId) {
    const run = await call("wakeup", "POST", `/api/agents/${ids.agentId}/wakeup`, { source: "on_demand", reason: "sweep" });
    ids.runId = run?.id ?? run?.runId ?? run?.run?.id;
    const deadline = Date.now() + 15000;
    while (ids.runId && Date.now() < deadline) {
      const r = await fetch(`${base}/api/heartbeat-runs/${ids.runId}`).then((x) => x.json()).catch(() => null);
      if (r && !["queued", "running"].includes(r.status)) break;
      await new Promise((ok) => setTimeout(ok, 250));
    }
    await call("agent update", "PATCH", `/api/agents/${ids.agentId}`, { title: "Chief executive" });
    const revs = await call("config revisions", "GET", `/api/agents/${ids.agentId}/config-revisions`);
    ids.configRevisionId = (Array.isArray(revs) ? revs : revs?.revisions ?? [])[0]?.id;
  }
  if (ids.agentKey && ids.issueId) {
    // An agent's comment (feedback votes are on agents' comments).
    const res = await fetch(`${base}/api/issues/${ids.issueId}/comments`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ids.agentKey}`, ...(ids.runId ? { "x-paperclip-run-id": ids.runId } : {}) },
      body: JSON.stringify({ body: "Done: the draft is up." }),
    }).catch(() => null);
    if (res?.ok) ids.agentCommentId = (await res.json()).id;
    else failed.push(`agent comment (${res?.status})`);
  }
  const members = await call("members", "GET", `${c}/members`);
  ids.memberId = (Array.isArray(members) ? members : members?.members ?? [])[0]?.id;

  // Files some commands read.
  writeFileSync(join(work, "note.txt"), "an attachment\n");
  writeFileSync(join(work, "logo.png"), Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64"));
  // A git repository for the project workspace.
  mkdirSync(join(work, "repo"), { recursive: true });
  writeFileSync(join(work, "repo", "README.md"), "# Website\n");
  const git = (...a) => spawnSync("git", ["-C", join(work, "repo"), "-c", "user.name=sweep", "-c", "user.email=sweep@example.com", ...a]);
  git("init", "-q", "-b", "main");
  git("add", ".");
  git("commit", "-qm", "init");
  mkdirSync(join(work, "agent-home"), { recursive: true });
  writeFileSync(join(work, "agent-home", "AGENTS.md"), "# Ada\n\nYou run the company.\n");
  const skillDir = join(work, "skill-src", "changelog");
  mkdirSync(skillDir, { recursive: true });
  writeFileSync(join(skillDir, "SKILL.md"), "---\nname: changelog\ndescription: Keep the changelog\n---\n\n# Changelog\n");
  for (const k of Object.keys(ids)) if (ids[k] === undefined || ids[k] === null) delete ids[k];
  return { ids, failed };
}
