// Detail pages in a real browser: an original-style link
// (`/ACM/issues/acm-1`) lands on the task; a failed run opened from its
// agent's page shows its cause and Retry opens the new run; the approval,
// project and goal pages render. Screenshots at desktop and phone width.
// Usage: node detail_pages.mjs <base-url> <screenshot-dir>
import { start } from "./lib.mjs";

const s = await start();
const { page, base } = s;

async function api(method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { "content-type": "application/json", accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function until(what, probe, ms = 60000) {
  const end = Date.now() + ms;
  for (;;) {
    const got = await probe();
    if (got) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

await s.finish(async () => {
  s.step("set up a company with a failing agent, a project, a goal and a hire");
  const company = await api("POST", "/api/companies", { name: "Acme Detail" });
  const cid = company.id;
  const p = company.issuePrefix;
  const lead = await api("POST", `/api/companies/${cid}/agents`, {
    name: "Lead", adapterType: "process", adapterConfig: { command: "true" },
  });
  const builder = await api("POST", `/api/companies/${cid}/agents`, {
    name: "Builder", adapterType: "process",
    adapterConfig: { command: "sh", args: ["-c", "echo working on it; echo the build broke >&2; exit 3"] },
  });
  const goal = await api("POST", `/api/companies/${cid}/goals`, { title: "Win the market", description: "Be first." });
  const sub = await api("POST", `/api/companies/${cid}/goals`, { title: "Ship the website", parentId: goal.id });
  const project = await api("POST", `/api/companies/${cid}/projects`, {
    name: "Website Relaunch", description: "A faster site.", goalId: sub.id,
  });
  const task = await api("POST", `/api/companies/${cid}/issues`, {
    title: "Build the site", projectId: project.id, goalId: sub.id, assigneeAgentId: builder.id, status: "todo",
  });
  await api("PATCH", `/api/companies/${cid}`, { requireBoardApprovalForNewAgents: true });
  const hire = await api("POST", `/api/companies/${cid}/agent-hires`, {
    name: "Analyst", role: "researcher", reportsTo: lead.id, budgetMonthlyCents: 5000,
    adapterType: "process", adapterConfig: { command: "true" },
  });
  await api("POST", `/api/issues/${task.id}/approvals`, { approvalId: hire.approval.id });

  s.step("an original-style link lands on the task");
  await page.goto(`${base}/${p}/issues/${task.identifier.toLowerCase()}`);
  await page.waitForURL(`**/${p}/tasks/${task.identifier}`);
  await page.locator("h1", { hasText: task.identifier }).waitFor();

  s.step("the failed run opens from the agent's page");
  const failed = await until("the failed run", async () => {
    const runs = await api("GET", `/api/companies/${cid}/heartbeat-runs?agentId=${builder.id}`);
    return runs.find((r) => r.status === "failed");
  });
  await page.goto(`${base}/${p}/agents/${builder.urlKey}`);
  await page.locator(`tr[data-run-status="failed"] a[href$="/runs/${failed.id}"]`).click();
  await page.waitForURL(`**/agents/${builder.urlKey}/runs/${failed.id}`);
  await page.locator(".run-outcome", { hasText: "Failed." }).waitFor();
  await page.locator(".run-error", { hasText: "nonzero_exit" }).waitFor();
  await page.locator("pre.log", { hasText: "the build broke" }).waitFor();
  await page.locator("a .ident", { hasText: task.identifier }).first().waitFor();
  await s.shotBoth("run");

  s.step("Retry opens the new run");
  await page.locator("button[data-retry-run]").click();
  await page.waitForURL((url) => url.pathname.includes("/runs/") && !url.pathname.endsWith(failed.id));
  await page.locator("dt", { hasText: "Retry of" }).waitFor();
  const retried = await api("GET", `/api/companies/${cid}/heartbeat-runs?agentId=${builder.id}`);
  if (!retried.some((r) => r.retryOfRunId === failed.id)) throw new Error("no run retries the failed one");

  s.step("the runs list pages the agent's runs");
  await page.goto(`${base}/${p}/agents/${builder.urlKey}/runs`);
  await page.locator(`a[href$="/runs/${failed.id}"]`).waitFor();
  await s.shotBoth("agent-runs");

  s.step("the approval opens from the approvals list");
  await page.goto(`${base}/${p}/approvals`);
  await page.locator(`a[href="/${p}/approvals/${hire.approval.id}"]`).first().click();
  await page.waitForURL(`**/approvals/${hire.approval.id}`);
  await page.locator("h1", { hasText: "Hire Analyst" }).waitFor();
  await page.locator("dd", { hasText: "$50.00" }).waitFor();
  await page.locator("dd a", { hasText: "Lead" }).first().waitFor();
  await page.locator("textarea[name=body]").fill("Is the budget enough?");
  await page.locator("form[data-api-form=approval-comment] button[type=submit]").click();
  await page.locator(".comment-body", { hasText: "Is the budget enough?" }).waitFor();
  await s.shotBoth("approval");
  await page.locator("input[name=decisionNote]").fill("Welcome aboard");
  await page.locator("button[data-decide=approve]").click();
  await page.locator('[data-decision="approved"]', { hasText: "Welcome aboard" }).waitFor();

  s.step("the project and goal pages");
  await page.goto(`${base}/${p}/projects`);
  await page.locator(`a[href="/${p}/projects/${project.urlKey}"]`).click();
  await page.locator("h1", { hasText: "Website Relaunch" }).waitFor();
  await page.locator(".tasks-of .ident", { hasText: task.identifier }).waitFor();
  await s.shotBoth("project");
  await page.goto(`${base}/${p}/goals`);
  await page.locator(`a[href="/${p}/goals/${sub.id}"]`).click();
  await page.locator("h1", { hasText: "Ship the website" }).waitFor();
  await page.locator("[data-parent-goal]", { hasText: "Win the market" }).waitFor();
  await s.shotBoth("goal");
});
