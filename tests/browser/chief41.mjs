// The onboarding chief in the board (issue 41): the first-run page offers a
// chief of staff; on an empty company's dashboard a person starts with the
// example chief (no model), writes a goal in the chat, approves the plan
// card, accepts the suggested tasks, and sees the tasks, named by
// identifier, in the chief's reply and on the Tasks page.
// Usage: node chief41.mjs <base-url> <screenshot-dir>
import { start } from "./lib.mjs";

const s = await start();
const { page, base } = s;
const api = async (method, path, data) => {
  const res = await page.request.fetch(base + path, { method, data });
  if (!res.ok()) throw new Error(`${method} ${path}: ${res.status()} ${await res.text()}`);
  return res.json();
};
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}/;

await s.finish(async () => {
  s.step("the first-run page offers a chief of staff");
  await page.goto(`${base}/`);
  await page.locator("#chief-first-run", { hasText: "Or start with a chief of staff" }).waitFor();
  await page.locator("#chief-first-run select[name=adapterType] option[value=example]").waitFor({ state: "attached" });
  await s.shot("first-run");
  await page.fill("#chief-first-run input[name=name]", "Corner Shop");
  await page.click("#chief-first-run button[type=submit]");
  await page.waitForURL(/\/chats\/chief$/);
  await page.locator("h1", { hasText: "Chat with Chief" }).waitFor();

  s.step("an empty company's dashboard: start with the example chief");
  const company = await api("POST", "/api/companies", { name: "Bakery" });
  const p = company.issuePrefix;
  await page.goto(`${base}/${p}/dashboard`);
  const card = page.locator("#chief-start");
  await card.locator("h2", { hasText: "Start with a chief of staff" }).waitFor();
  await s.shot("dashboard-empty");
  await card.locator("button[type=submit]").click();
  await page.waitForURL(`${base}/${p}/chats/chief`);
  await page.locator("h1", { hasText: "Chat with Chief" }).waitFor();
  await page.locator("#live-state.on").waitFor();

  s.step("a goal: the chief answers with a plan to approve");
  await page.fill("#chat-body", "Open a bakery that sells fresh bread by spring");
  await page.click("#chat-composer button[type=submit]");
  await page.locator(".chat-msg.agent", { hasText: "Here is my plan" }).waitFor({ timeout: 30000 });
  const plan = page.locator("article.interaction[data-interaction-kind=request_confirmation][data-interaction-status=pending]");
  await plan.locator(".kind", { hasText: "Plan approval" }).waitFor({ timeout: 30000 });
  await plan.locator(".details", { hasText: "Researcher" }).waitFor();
  await s.shot("plan-card");

  s.step("the plan approved: hires asked for, first tasks suggested");
  await plan.locator("button", { hasText: "Approve plan" }).click();
  await page.locator(".chat-msg.agent", { hasText: "The plan is approved" }).waitFor({ timeout: 30000 });
  const tasks = page.locator("article.interaction[data-interaction-kind=suggest_tasks][data-interaction-status=pending]");
  await tasks.waitFor({ timeout: 30000 });
  await s.shot("tasks-card");
  const approvals = await api("GET", `/api/companies/${company.id}/approvals?status=pending`);
  if (approvals.filter((a) => a.type === "hire_agent").length !== 2) throw new Error(`approvals: ${JSON.stringify(approvals)}`);

  s.step("the tasks accepted: the chief names them by identifier");
  await tasks.locator("button[type=submit]", { hasText: "Create selected tasks" }).click();
  const named = page.locator(".chat-msg.agent .chat-body", { hasText: new RegExp(`Created ${p}-\\d+`) });
  await named.waitFor({ timeout: 30000 });
  const reply = await named.innerText();
  const idents = reply.match(new RegExp(`${p}-\\d+`, "g")) || [];
  if (idents.length !== 3) throw new Error(`the reply names ${idents.length} tasks: ${reply}`);
  if (UUID.test(await page.locator("#chat-thread").innerText())) throw new Error("a UUID in the chat");
  await s.shot("tasks-created");

  s.step("the tasks are on the Tasks page");
  await page.goto(`${base}/${p}/tasks`);
  for (const ident of idents) await page.locator(`text=${ident}`).first().waitFor();
  await page.locator("text=Find out what the goal needs").first().waitFor();
  await s.shot("tasks-page");
});
