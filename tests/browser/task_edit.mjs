// Editing every field of a task on its page, as a person would: title and
// description (with preview, and a conflict with a change made meanwhile),
// project, goal, assignee (agent, then the board), labels made on the spot,
// parent and blockers found by search, and a comment sent with Ctrl+Enter.
import { start } from "./lib.mjs";

const s = await start();
const { page, base } = s;
const post = async (path, data, method = "POST") => {
  const res = await page.request.fetch(base + path, { method, data });
  if (!res.ok()) throw new Error(`${method} ${path}: ${res.status()} ${await res.text()}`);
  return res.json();
};

const get = async (path) => {
  const res = await page.request.get(base + path);
  if (!res.ok()) throw new Error(`GET ${path}: ${res.status()} ${await res.text()}`);
  return res.json();
};

await s.finish(async () => {
  s.step("a company with tasks, a project, a goal and an agent");
  const company = await post("/api/companies", { name: "Edit Works", description: "Edit all the things" });
  const cid = company.id;
  const p = company.issuePrefix;
  const project = await post(`/api/companies/${cid}/projects`, { name: "Website" });
  const goal = await post(`/api/companies/${cid}/goals`, { title: "Launch in spring" });
  const agent = await post(`/api/companies/${cid}/agents`, { name: "Writer", adapterType: "process", adapterConfig: { command: "true" } });
  const task = await post(`/api/companies/${cid}/issues`, { title: "Draft the launch post", status: "backlog" });
  const parent = await post(`/api/companies/${cid}/issues`, { title: "Marketing umbrella", status: "backlog" });
  const blocker = await post(`/api/companies/${cid}/issues`, { title: "Pick a zebra mascot", status: "backlog" });
  await page.goto(`${base}/${p}/tasks/${task.identifier}`);
  await page.locator("#live-state.on").waitFor();

  s.step("edit title and description, with a preview");
  await page.click("[data-edit-task]");
  await page.fill("#edit-task input[name=title]", "Write the launch post");
  await page.fill("#edit-task textarea[name=description]", "We ship **Tuesday**.");
  await page.click("#edit-task [data-edit-tab=preview]");
  await page.locator("#edit-task .edit-preview strong", { hasText: "Tuesday" }).waitFor();
  await s.shotBoth("task-edit-dialog");
  await page.click("#edit-task button[type=submit]");
  await page.locator("h1", { hasText: "Write the launch post" }).waitFor();
  await page.locator("article.description strong", { hasText: "Tuesday" }).waitFor();

  s.step("a change made meanwhile is shown, not overwritten");
  await page.click("[data-edit-task]");
  await page.locator("#edit-task input[name=title]").waitFor();
  await post(`/api/issues/${task.id}`, { title: "Title from someone else" }, "PATCH");
  await page.fill("#edit-task input[name=title]", "My own title");
  await page.click("#edit-task button[type=submit]");
  await page.locator("#edit-task .conflict pre", { hasText: "Title from someone else" }).waitFor();
  let now = await get(`/api/issues/${task.id}`);
  if (now.title !== "Title from someone else") throw new Error(`overwritten without asking: ${now.title}`);
  await page.click("#edit-task button[type=submit]");
  await page.locator("h1", { hasText: "My own title" }).waitFor();

  s.step("project, goal and assignee");
  await page.selectOption("#prop-project", project.id);
  await s.toast("Task updated").first().waitFor();
  await page.locator("#prop-project option:checked", { hasText: "Website" }).waitFor({ state: "attached" });
  await page.selectOption("#prop-goal", goal.id);
  await page.locator("#prop-goal option:checked", { hasText: "Launch in spring" }).waitFor({ state: "attached" });
  await page.selectOption("#prop-assignee", agent.id);
  await s.toast("Assignee changed").first().waitFor();
  await page.selectOption("#prop-assignee", "user:local-board");
  await page.locator("#prop-assignee option:checked", { hasText: "Me (board)" }).waitFor({ state: "attached" });

  s.step("a label made on the spot, then removed");
  await page.click(".label-picker > summary");
  await page.fill("#new-label-name", "launch");
  await page.click("form.new-label button[type=submit]");
  await page.locator(".labels-edit > span.label", { hasText: "launch" }).waitFor();
  await page.locator(".label-picker input[data-label-toggle]").first().uncheck();
  await page.locator(".labels-edit > span.muted", { hasText: "None" }).waitFor();

  s.step("parent and blocker by search");
  await page.click("dd:has(input[data-pick-task=parent]) details.picker > summary");
  await page.fill("input[data-pick-task=parent]", "umbrella");
  await page.click(`button[data-pick-ident="${parent.identifier}"]`);
  await page.locator(`dd a:has-text("${parent.identifier}")`).first().waitFor();
  await page.click("dd[data-blockers] details.picker > summary");
  await page.fill("input[data-pick-task=blocker]", "zebra");
  await page.click(`button[data-pick-ident="${blocker.identifier}"]`);
  await page.locator(`dd[data-blockers] .chip`, { hasText: blocker.identifier }).waitFor();
  now = await get(`/api/issues/${task.id}`);
  if (now.parentId !== parent.id || now.projectId !== project.id || now.goalId !== goal.id
    || now.assigneeUserId !== "local-board" || now.assigneeAgentId
    || !(now.blockedBy || []).some((b) => b.id === blocker.id)) {
    throw new Error(`the task does not hold the edits: ${JSON.stringify(now)}`);
  }
  await s.shotBoth("task-edited");
  await page.click(`dd[data-blockers] .chip button`);
  await page.locator("dd[data-blockers] > span.muted", { hasText: "Nothing" }).waitFor();

  s.step("Ctrl+Enter sends a comment");
  await page.fill("form.composer textarea[name=body]", "Sent from the keyboard");
  await page.press("form.composer textarea[name=body]", "Control+Enter");
  await page.locator("article.comment", { hasText: "Sent from the keyboard" }).waitFor();
});
