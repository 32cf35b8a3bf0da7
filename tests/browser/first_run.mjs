// A newcomer's first minute: a fresh server, the welcome page, "Try a sample
// company", and the sample's agents (the bundled shell-script agent, no model
// key) finishing a task live on the dashboard and the board.
// Usage: node first_run.mjs <base-url> <screenshot-dir>
import { start } from "./lib.mjs";

const s = await start();
const { page, base } = s;

await s.finish(async () => {
  s.step("the welcome page offers the sample company");
  await page.goto(base + "/");
  const sample = page.locator("main [data-sample-company]");
  await sample.waitFor();
  await s.shotBoth("welcome");

  s.step("one click creates it and opens its dashboard");
  await Promise.all([page.waitForURL(/\/[A-Z]+\/dashboard$/), sample.click()]);
  const prefix = new URL(page.url()).pathname.split("/")[1];
  await page.locator("h1", { hasText: "Dashboard" }).waitFor();
  await page.locator(".page-head", { hasText: "Sample Lemonade Stand" }).waitFor();
  const id = (await page.locator("#company-id").innerText()).trim();
  if (!/^[0-9a-f-]{36}$/.test(id)) throw new Error(`the dashboard shows no company id: "${id}"`);

  s.step("a task reaches done on the dashboard, live");
  await page.locator("ul.tasklist .pill[data-status=done]").first().waitFor({ timeout: 60000 });
  await s.shotBoth("sample-dashboard");

  s.step("the board has it in the done column");
  await page.goto(`${base}/${prefix}/tasks?view=board`);
  const done = page.locator('section.column[data-column="done"] article.task-card').first();
  await done.waitFor({ timeout: 30000 });
  const ident = await done.getAttribute("data-identifier");

  s.step("its page has the agent's comment");
  await page.goto(`${base}/${prefix}/tasks/${ident}`);
  await page.getByText("Example agent: woken by issue_assigned").first().waitFor();

  s.step("the company switcher's New company dialog offers the sample too");
  await page.selectOption("#company-switcher", "__new");
  await page.locator("#new-company [data-sample-company]").waitFor();
});
