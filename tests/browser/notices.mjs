// A run fails while the person is on another page: a toast names the agent
// and the task and links to the run, the Inbox badge appears, and the
// inbox item is New until the inbox has been seen, and can be dismissed
// (the badge goes with it). An approval asked for is noticed the same way.
import { start } from "./lib.mjs";

const s = await start();
const { page, base } = s;
const post = async (path, data) => {
  const res = await page.request.post(base + path, { data });
  if (!res.ok()) throw new Error(`POST ${path}: ${res.status()} ${await res.text()}`);
  return res.json();
};

await s.finish(async () => {
  s.step("a company with an agent that will fail");
  const company = await post("/api/companies", { name: "Notice Works" });
  const p = company.issuePrefix;
  const agent = await post(`/api/companies/${company.id}/agents`, {
    name: "Flaky", adapterType: "process",
    adapterConfig: { command: "sh", args: ["-c", "echo 'disk full' >&2; exit 3"] },
  });
  await page.goto(`${base}/${p}/costs`);
  await page.locator("#live-state.on").waitFor();

  s.step("the failure is noticed on the costs page");
  const task = await post(`/api/companies/${company.id}/issues`, { title: "Fill the disk", status: "todo", assigneeAgentId: agent.id });
  const toast = page.locator("#toasts .toast.notice", { hasText: `Flaky failed on ${task.identifier}` });
  await toast.waitFor();
  const href = await toast.locator("a").getAttribute("href");
  if (!href.startsWith(`/${p}/agents/${agent.id}/runs/`)) throw new Error(`the toast links to ${href}`);
  await page.locator("#open-failures", { hasText: "1" }).waitFor();
  await s.shot("failure-toast");

  s.step("the inbox shows it, and Dismiss clears the badge");
  await page.goto(`${base}/${p}/inbox`);
  await page.locator("[data-failed-run].unread .new-tag", { hasText: "New" }).waitFor();
  await s.shotBoth("inbox");
  // Seen once, it is read on the next visit.
  await page.reload();
  await page.locator("[data-failed-run]", { hasText: task.identifier }).waitFor();
  if (await page.locator("[data-failed-run].unread").count()) throw new Error("a seen failure is still New");
  await page.click("[data-failed-run] button[data-dismiss]");
  await page.locator("[data-failures] p.empty").waitFor();
  await page.locator("#open-failures").waitFor({ state: "detached" });
  await page.goto(`${base}/${p}/inbox?tab=dismissed`);
  await page.locator("[data-failed-run]", { hasText: task.identifier }).waitFor();

  s.step("an approval asked for anywhere is noticed here");
  await page.goto(`${base}/${p}/costs`);
  await page.locator("#live-state.on").waitFor();
  const approval = await post(`/api/companies/${company.id}/approvals`, {
    type: "request_board_approval", payload: { summary: "Ship the migration tonight" },
  });
  const asked = s.toast("An approval is waiting for you.");
  await asked.waitFor();
  const link = await asked.locator("a").getAttribute("href");
  if (link !== `/${p}/approvals/${approval.id}`) throw new Error(`the approval toast links to ${link}`);
  await page.locator("#pending-approvals", { hasText: "1" }).waitFor();
  await s.shot("approval-toast");
});
