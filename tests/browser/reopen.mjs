// Reopening finished work from the task page: the Reopen button on a done
// task, and the comment box on a closed task, which reopens it when ticked
// (the default for an agent's task) and, unticked, posts a note that wakes
// nobody and says so.
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
  s.step("a company with a done task of the board's and one of an agent's");
  const company = await post("/api/companies", { name: "Reopen Works" });
  const cid = company.id;
  const p = company.issuePrefix;
  const agent = await post(`/api/companies/${cid}/agents`, { name: "Builder", adapterType: "process", adapterConfig: { command: "true" } });
  const mine = await post(`/api/companies/${cid}/issues`, { title: "Write the FAQ", status: "done", assigneeUserId: "local-board" });
  const theirs = await post(`/api/companies/${cid}/issues`, { title: "Build the pricing page", status: "done", assigneeAgentId: agent.id });

  s.step("Reopen brings a done task back to todo");
  await page.goto(`${base}/${p}/tasks/${mine.identifier}`);
  await page.locator("#live-state.on").waitFor();
  await page.locator("aside.properties .pill[data-status=done]").waitFor();
  await s.shot("task-done");
  await page.click("aside.properties [data-reopen]");
  await s.toast(`Reopened ${mine.identifier}`).first().waitFor();
  await page.locator("aside.properties .pill[data-status=todo]").waitFor();
  if (await page.locator("aside.properties [data-reopen]").count()) throw new Error("Reopen is still offered on an open task");
  let now = await get(`/api/issues/${mine.id}`);
  if (now.status !== "todo") throw new Error(`reopened to ${now.status}`);
  await s.shot("task-reopened");

  s.step("unticked, a comment on a closed task is a note that wakes nobody");
  await page.goto(`${base}/${p}/tasks/${theirs.identifier}`);
  await page.locator("#live-state.on").waitFor();
  // The box is in the live region (it follows the status), in the composer's form.
  const box = page.locator("input[name=reopen][form=task-composer]");
  if (!(await box.isChecked())) throw new Error("the box is not ticked for an agent's done task");
  await box.uncheck();
  await page.fill("form.composer textarea[name=body]", "Just a note for the record");
  await page.click("form.composer button.primary[type=submit]");
  await s.toast(`${theirs.identifier} is done, so Builder was not woken`).first().waitFor();
  await page.locator("article.comment", { hasText: "Just a note for the record" }).waitFor();
  now = await get(`/api/issues/${theirs.id}`);
  if (now.status !== "done") throw new Error(`a note changed the status to ${now.status}`);

  s.step("ticked, the comment reopens the task");
  await box.check();
  await page.fill("form.composer textarea[name=body]", "Please also add a yearly plan");
  await page.click("form.composer button.primary[type=submit]");
  await s.toast("the task is reopened").first().waitFor();
  await page.locator("aside.properties .pill:not([data-status=done])").first().waitFor();
  now = await get(`/api/issues/${theirs.id}`);
  if (now.status === "done" || now.status === "cancelled") throw new Error(`still ${now.status}`);
  await box.waitFor({ state: "detached" });
  await s.shot("task-reopened-by-comment");
});
