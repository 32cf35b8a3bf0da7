// The board in a real browser: a person creates a company, hires a process
// agent, gives it a task and watches the run finish live on the task page,
// then approves a hire and sees the dashboard and costs change. Every main
// page is screenshotted. Usage: node board.mjs <base-url> <screenshot-dir>
// Exits non-zero with the failed step on stderr. It prints
// `restart-server <issue id>` once and waits for `restarted` on stdin.
import { launch } from "./lib.mjs";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";

// Lines from the test harness on stdin (answers to requests printed on stdout).
const input = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const nextInput = async () => (await input.next()).value;

const [base, shots] = process.argv.slice(2);
if (!base || !shots) {
  console.error("usage: node board.mjs <base-url> <screenshot-dir>");
  process.exit(2);
}
mkdirSync(shots, { recursive: true });

// The agent: checks the task out, works until the page has seen it
// running, reports a cost, comments and finishes.
const GATE = join(shots, "agent-may-finish");
const AGENT_SCRIPT = [
  `set -e`,
  `api() { curl -sS -f -X "$1" -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'content-type: application/json' "$PAPERCLIP_API_URL$2" -d "$3"; }`,
  `[ "$PAPERCLIP_WAKE_REASON" = issue_assigned ] || { echo "nothing to do for $PAPERCLIP_WAKE_REASON"; exit 0; }`,
  `api POST "/api/issues/$PAPERCLIP_TASK_ID/checkout" "{\\"agentId\\":\\"$PAPERCLIP_AGENT_ID\\",\\"expectedStatuses\\":[\\"todo\\"]}" >/dev/null`,
  // Holds until the test has seen the run running (or 30 s), so watching
  // it live does not depend on timing.
  `echo "drafting the plan"; i=0; while [ ! -e "${GATE}" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done`,
  `api POST "/api/companies/$PAPERCLIP_COMPANY_ID/cost-events" "{\\"agentId\\":\\"$PAPERCLIP_AGENT_ID\\",\\"issueId\\":\\"$PAPERCLIP_TASK_ID\\",\\"provider\\":\\"anthropic\\",\\"model\\":\\"claude-sonnet-4\\",\\"inputTokens\\":1200,\\"outputTokens\\":300,\\"costCents\\":123}" >/dev/null`,
  `api POST "/api/issues/$PAPERCLIP_TASK_ID/comments" '{"body":"Plan drafted: **three** launch steps."}' >/dev/null`,
  `api PATCH "/api/issues/$PAPERCLIP_TASK_ID" '{"status":"done"}' >/dev/null`,
].join("\n");

const { browser, page, problems } = await launch();

let stepName = "start";
const step = (name) => { stepName = name; console.log(`step: ${name}`); };
const shot = (name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true, animations: "disabled" });
const counter = async (name) => (await page.locator(`[data-counter="${name}"] b`).innerText()).trim();
const toastText = (text) => page.locator("#toasts .toast", { hasText: text });

try {
  step("first run: create the company");
  await page.goto(base + "/");
  await page.fill("form[data-api-form=new-company] input[name=name]", "Acme Robotics");
  await page.fill("form[data-api-form=new-company] textarea[name=description]", "Ship the robot kit");
  await page.click("form[data-api-form=new-company] button[type=submit]");
  await page.waitForURL(/\/[A-Z]+\/dashboard$/);
  const prefix = await page.locator("body").getAttribute("data-prefix");
  const at = (path) => `${base}/${prefix}${path}`;
  if ((await counter("agents-enabled")) !== "0") throw new Error("a new company should have no agents");
  await page.locator("#live-state.on").waitFor();

  step("hire a process agent");
  await page.goto(at("/agents"));
  await page.click("[data-open-dialog=hire]");
  await page.fill("#hire input[name=name]", "Builder");
  await page.fill("#hire input[name=title]", "Founding engineer");
  await page.selectOption("#hire select[name=adapterType]", "process");
  await page.locator("#hire details.advanced").evaluate((d) => { d.open = true; }); // the JSON view under the fields
  await page.fill("#hire textarea[name=adapterConfig]", JSON.stringify({ command: "sh", args: ["-c", AGENT_SCRIPT] }));
  await page.click("#hire button[type=submit]");
  await toastText("Builder is hired").waitFor();
  await page.locator("tr[data-live-agent]", { hasText: "Builder" }).waitFor();

  step("create a task assigned to it from the New Task dialog");
  await page.goto(at("/dashboard"));
  const openBefore = Number(await counter("tasks-open"));
  await page.click("button[data-open-dialog=new-task]");
  await page.fill("#new-task input[name=title]", "Write the launch plan");
  await page.fill("#new-task textarea[name=description]", "Cover *pricing* and the **launch date**.");
  await page.locator("#new-task select[name=assigneeAgentId] option", { hasText: "Builder" }).waitFor({ state: "attached" });
  await page.selectOption("#new-task select[name=assigneeAgentId]", { label: "Builder" });
  await page.click("#new-task button[type=submit]");
  await page.waitForURL(new RegExp(`/${prefix}/tasks/${prefix}-1$`));
  const title = await page.locator("h1").innerText();
  if (!title.includes(`${prefix}-1`) || !title.includes("Write the launch plan")) throw new Error(`task heading is "${title}"`);
  if ((await page.locator("article.description em").innerText()) !== "pricing") throw new Error("description Markdown not rendered");

  step("watch the run start and finish live, without a reload");
  await page.evaluate(() => { window.__sameDocument = true; });
  await page.locator("details.run[data-run-status=running]").waitFor({ timeout: 60000 });
  await shot("task-running");
  writeFileSync(GATE, "");
  await page.locator("details.run[data-run-status=succeeded]").waitFor({ timeout: 60000 });
  await page.locator("article.comment", { hasText: "Plan drafted: three launch steps." }).waitFor({ timeout: 10000 });
  await page.locator(".properties .pill[data-status=done]").waitFor({ timeout: 10000 });
  if (!(await page.evaluate(() => window.__sameDocument === true))) throw new Error("the task page reloaded");
  const run = page.locator("details.run").first();
  if (!(await run.locator(":scope > summary").innerText()).includes("Builder")) throw new Error("run summary does not name the agent");
  // Progressive disclosure: the outcome line, then the steps, then the raw log.
  if (await run.locator("ol.steps").isVisible()) throw new Error("a finished run should show only its outcome line");
  await run.locator(":scope > summary").click();
  await run.locator("ol.steps li.step").first().waitFor();
  await run.locator("details.raw > summary").click();
  await run.locator("details.raw pre", { hasText: "drafting the plan" }).waitFor();
  const costLine = await page.locator(".properties").innerText();
  if (!costLine.includes("$1.23")) throw new Error(`task cost not shown: ${costLine}`);
  await shot("task-detail");

  step("a dropped live connection reconnects and catches up");
  // The test harness restarts the server on the same port (a real drop) and
  // adds a comment through the API before the page has reconnected.
  const issueId = await page.locator(".task-page").getAttribute("data-issue-id");
  await page.evaluate(() => window.paperclipEvents.addEventListener("error", () => { window.__dropped = true; }));
  console.log(`restart-server ${issueId}`);
  if ((await nextInput()) !== "restarted") throw new Error("the harness did not restart the server");
  await page.locator("article.comment", { hasText: "Written while you were away" }).waitFor({ timeout: 60000 });
  await page.locator("#live-state.on").waitFor();
  if (!(await page.evaluate(() => window.__dropped === true))) throw new Error("the stream never dropped");
  if (!(await page.evaluate(() => window.__sameDocument === true))) throw new Error("the task page reloaded");

  step("comment from the composer with a mention pill");
  // A note on the done task: unticked, the comment does not reopen it.
  await page.uncheck("input[name=reopen][form=task-composer]");
  await page.click("form.composer [data-mention=Builder]");
  await page.locator("form.composer textarea").pressSequentially("thanks, looks good");
  await page.click("form.composer button[type=submit]");
  await page.locator("article.comment", { hasText: "@Builder thanks, looks good" }).waitFor();

  step("require approval for hires, then hire a second agent");
  await page.goto(at("/agents"));
  await page.check("[data-patch-company]");
  await toastText("Company settings saved").waitFor();
  await page.click("[data-open-dialog=hire]");
  await page.fill("#hire input[name=name]", "Reviewer");
  await page.selectOption("#hire select[name=reportsTo]", { label: "Builder" });
  await page.selectOption("#hire select[name=adapterType]", "process");
  await page.locator("#hire details.advanced").evaluate((d) => { d.open = true; }); // the JSON view under the fields
  await page.fill("#hire textarea[name=adapterConfig]", JSON.stringify({ command: "true" }));
  await page.click("#hire button[type=submit]");
  await toastText("Reviewer waits for board approval").waitFor();
  await page.locator("#pending-approvals", { hasText: "1" }).waitFor();

  step("approve the pending hire");
  await page.goto(at("/approvals"));
  const card = page.locator("article.approval", { hasText: "Reviewer" });
  await card.waitFor();
  await shot("approvals-pending");
  await card.locator("input[name=decisionNote]").fill("Welcome aboard");
  await card.locator("[data-decide=approve]").click();
  await toastText("Approved").waitFor();
  await page.locator("table.data tr", { hasText: "Welcome aboard" }).waitFor();
  if (await page.locator("#pending-approvals").count()) throw new Error("pending badge still shown after approval");
  await shot("approvals");

  step("dashboard counters and costs changed");
  await page.goto(at("/dashboard"));
  if ((await counter("agents-enabled")) !== "2") throw new Error(`agents enabled = ${await counter("agents-enabled")}`);
  if ((await counter("month-spend")) !== "$1.23") throw new Error(`month spend = ${await counter("month-spend")}`);
  if ((await counter("pending-approvals")) !== "0") throw new Error("pending approvals counter not 0");
  if (Number(await counter("tasks-open")) !== openBefore) throw new Error("the finished task still counts as open");
  await page.locator(".agent-card", { hasText: "Builder" }).waitFor();
  await page.locator(".charts svg").first().waitFor();
  await shot("dashboard");
  await page.goto(at("/costs"));
  if ((await page.locator("[data-counter=company-spend]").innerText()).trim() !== "$1.23") throw new Error("company spend on costs page");
  await page.locator("table", { hasText: "claude-sonnet-4" }).waitFor();
  await shot("costs");

  step("org chart shows the reporting line");
  await page.goto(at("/org"));
  await page.locator(".org-root > li > a.org-node", { hasText: "Builder" }).waitFor();
  await page.locator(".org-root > li > ul a.org-node", { hasText: "Reviewer" }).waitFor();
  await shot("org");

  step("board: keyboard move to an allowed status, refusal of a disallowed one");
  await page.click("button[data-open-dialog=new-task]");
  await page.fill("#new-task input[name=title]", "Order the parts");
  await page.uncheck("#new-task input[name=todo]");
  // The parent picker searches (full-text) as you type, not a preloaded list.
  await page.fill("#new-task input[name=parentSearch]", "launch pla");
  await page.locator("#new-task select[name=parentId] option", { hasText: `${prefix}-1 Write the launch plan` }).waitFor({ state: "attached" });
  await page.click("#new-task button[type=submit]");
  await page.waitForURL(new RegExp(`/tasks/${prefix}-2$`));
  await page.locator(`dd a[href$="/tasks/${prefix}-1"]`).waitFor();
  await page.goto(at("/tasks?view=board"));
  const card2 = page.locator(`.task-card[data-identifier=${prefix}-2]`);
  if ((await card2.getAttribute("data-status")) !== "backlog") throw new Error("new task without todo should be backlog");
  await card2.focus();
  await page.keyboard.press("ArrowRight");
  await toastText(`${prefix}-2 moved to todo`).waitFor();
  await page.locator(`[data-column=todo] .task-card[data-identifier=${prefix}-2][data-status=todo]`).waitFor();
  await card2.dragTo(page.locator("[data-column=in_review]"));
  await page.locator("#toasts .toast.error", { hasText: `${prefix}-2 cannot move from todo to in review` }).waitFor();
  await card2.dragTo(page.locator("[data-column=blocked]"));
  await toastText(`${prefix}-2 moved to blocked`).waitFor();
  await page.locator(`[data-column=blocked] .task-card[data-identifier=${prefix}-2][data-status=blocked]`).waitFor();
  await shot("tasks-board");
  await page.goto(at("/tasks"));
  await page.fill("form.filters input[name=q]", "parts");
  await page.click("form.filters button[type=submit]");
  await page.locator("table.tasks tr", { hasText: `${prefix}-2` }).waitFor();
  if (await page.locator("table.tasks tr", { hasText: `${prefix}-1` }).count()) throw new Error("text filter kept the other task");
  await shot("tasks-list");

  step("a failed action shows the server's reason");
  await page.goto(at("/agents/builder"));
  await page.fill("form.config textarea[name=promptTemplate]", "Work on {{nonsense}}");
  await page.locator(".template-error", { hasText: "nonsense" }).waitFor();
  // The JSON view is the adapter form's "Advanced" part.
  await page.click("form.config details.advanced summary");
  await page.fill("form.config textarea[name=adapterConfig]", "{ not json");
  await page.fill("form.config textarea[name=promptTemplate]", "");
  await page.click("form.config button[type=submit]");
  await toastText("Advanced (JSON) is not a valid JSON object").waitFor();
  // The server is the judge too: a template smuggled in through the JSON
  // is refused, and its reason shown.
  await page.fill("form.config textarea[name=adapterConfig]", JSON.stringify({ command: "true", promptTemplate: "Do {{nonsense}}" }));
  await page.click("form.config button[type=submit]");
  await page.locator("#toasts .toast.error", { hasText: "nonsense" }).waitFor();
  await page.fill("form.config textarea[name=adapterConfig]", "{}");
  await page.fill("form.config input[name='hb.maxConcurrentRuns']", "1");
  await page.click("form[data-api-form=key] input[name=name]");
  await page.fill("form[data-api-form=key] input[name=name]", "laptop");
  await page.click("form[data-api-form=key] button[type=submit]");
  await page.locator("#new-key-token code", { hasText: "pcp_" }).waitFor();
  await shot("agent");

  step("activity and the remaining pages");
  await page.goto(at("/activity"));
  await page.locator("body", { hasText: `${prefix}-1` }).waitFor();
  await shot("activity");
  for (const name of ["inbox", "projects", "goals", "agents"]) {
    await page.goto(at(`/${name}`));
    // The company form's goal became the company's Goal.
    if (name === "goals") await page.locator("table.data a", { hasText: "Ship the robot kit" }).waitFor();
    await shot(name);
  }

  step("phone-sized screen");
  await page.setViewportSize({ width: 390, height: 800 });
  await page.goto(at("/dashboard"));
  await page.click("[data-toggle-sidebar]");
  await page.locator("#sidebar.open").waitFor();
  await shot("phone-dashboard-menu");
  // Every main page at phone width too (the feature scenarios shoot theirs).
  for (const name of ["dashboard", "inbox", "tasks", "tasks?view=board", "projects", "goals", "agents", "org",
    "approvals", "costs", "activity", "company/settings"]) {
    await page.goto(at(`/${name}`));
    await shot(`phone-${name.replace(/[^a-z]+/g, "-")}`);
  }

  if (problems.length) throw new Error(problems.join("; "));
  console.log("ok");
} catch (e) {
  console.error(`failed at "${stepName}": ${e.message}`);
  await shot("failure").catch(() => {});
  await browser.close();
  process.exit(1);
}
await browser.close();
// stdin (the harness channel) would keep the process alive.
process.exit(0);
