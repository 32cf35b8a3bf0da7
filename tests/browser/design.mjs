// The design system on every main page of a sample company: at 390 px no
// page is wider than the screen and the menu opens; the theme toggle cycles
// System → Light → Dark, changes the page's colours and survives a reload;
// the system's dark preference is followed until a choice is made.
//
// With TOUR_SHOTS=<dir> it also writes the documentation screenshots (each
// page light and dark at 1440 px, and at 390 px) and prints each page's
// cold weight as `weight: <page> <bytes> <requests> <ms to load>` lines for
// BENCHMARKS.md (`node design.mjs <base> <shots>`; see docs/screenshots).
import { start } from "./lib.mjs";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const s = await start();
const { page } = s;
const tour = process.env.TOUR_SHOTS || "";

async function json(path) {
  const r = await page.request.get(s.base + path);
  if (!r.ok()) throw new Error(`${path}: ${r.status()}`);
  return r.json();
}

const bg = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
const dark = (rgb) => {
  const [r, g, b] = rgb.match(/\d+/g).map(Number);
  return r + g + b < 200;
};

await s.finish(async () => {
  s.step("find the sample company's pages");
  const companies = await json("/api/companies");
  const company = companies.find((c) => c.name.startsWith("Sample")) || companies[0];
  const p = `/${company.issuePrefix}`;
  const tasks = await json(`/api/companies/${company.id}/issues`);
  const agents = await json(`/api/companies/${company.id}/agents`);
  const task = tasks.find((t) => t.identifier === process.env.TOUR_TASK) || tasks.find((t) => t.status === "in_progress") || tasks.find((t) => t.status === "done") || tasks[0];
  const agent = agents[0];
  const runs = await json(`/api/companies/${company.id}/heartbeat-runs?agentId=${agent.id}`);
  const pages = [
    ["dashboard", `${p}/dashboard`],
    ["tasks", `${p}/tasks`],
    ["board", `${p}/tasks?view=board`],
    ["task", `${p}/tasks/${task.identifier}`],
    ["agents", `${p}/agents`],
    ["agent", `${p}/agents/${agent.urlKey || agent.id}`],
    ["inbox", `${p}/inbox`],
    ["approvals", `${p}/approvals`],
    ["costs", `${p}/costs`],
    ["activity", `${p}/activity`],
    ["org", `${p}/org`],
    ["routines", `${p}/routines`],
    ["settings", `${p}/company/settings`],
  ];
  const run = Array.isArray(runs) ? runs[0] : null;
  if (run) pages.push(["run", `${p}/agents/${agent.urlKey || agent.id}/runs/${run.id}`]);

  s.step("every page fits 390 px, and the menu opens");
  await page.setViewportSize({ width: 390, height: 844 });
  for (const [name, url] of pages) {
    await page.goto(s.base + url);
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    if (wide > 392) throw new Error(`${name} is ${wide} px wide at 390 px`);
  }
  await page.goto(s.base + `${p}/dashboard`);
  await page.click("[data-toggle-sidebar]");
  await page.locator("#sidebar.open").waitFor();
  await page.locator("#sidebar a", { hasText: "Tasks" }).waitFor({ state: "visible" });

  s.step("the theme toggle cycles system → light → dark and is remembered");
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.emulateMedia({ colorScheme: "light" });
  await page.goto(s.base + `${p}/dashboard`);
  const toggle = page.locator("#theme-toggle");
  await toggle.waitFor();
  if ((await toggle.textContent()).trim() !== "Theme: system") throw new Error(`toggle says ${await toggle.textContent()}`);
  if (dark(await bg())) throw new Error("light system, system theme: the page is dark");
  await toggle.click();
  await page.waitForFunction(() => document.documentElement.dataset.theme === "light");
  await toggle.click();
  await page.waitForFunction(() => document.documentElement.dataset.theme === "dark");
  await page.waitForFunction(() => {
    const [r, g, b] = getComputedStyle(document.documentElement).backgroundColor.match(/\d+/g).map(Number);
    return r + g + b < 200;
  });
  await page.reload();
  if (!dark(await bg())) throw new Error("the dark choice was lost on reload");
  if ((await toggle.textContent()).trim() !== "Theme: dark") throw new Error("toggle label after reload");
  await toggle.click(); // back to system
  await page.waitForFunction(() => !document.documentElement.dataset.theme);
  await page.emulateMedia({ colorScheme: "dark" });
  await page.reload();
  if (!dark(await bg())) throw new Error("a dark system preference is not followed");
  await page.emulateMedia({ colorScheme: "light" });

  s.step("a backlog task with an assignee is not started; moving it to todo starts it");
  await page.goto(s.base + `${p}/dashboard`);
  await page.click("button[data-open-dialog=new-task]");
  const dialog = page.locator("dialog#new-task");
  await dialog.locator("input[name=title]").fill("Plan the autumn menu");
  await dialog.locator("select[name=assigneeAgentId]").selectOption({ label: agent.name });
  await dialog.locator("input[name=todo]").uncheck();
  await dialog.locator("button[type=submit]").click();
  await page.waitForURL(/\/tasks\/[A-Z]+-\d+$/);
  await page.locator("#backlog-waits", { hasText: `${agent.name} starts when you move it to todo` }).waitFor();
  const made = (await json(`/api/companies/${company.id}/issues`)).find((t) => t.title === "Plan the autumn menu");
  if (!made || made.status !== "backlog") throw new Error(`the new task is ${made && made.status}, not backlog`);
  // A wake is queued in the transaction that assigns: none now means none.
  const early = await json(`/api/companies/${company.id}/heartbeat-runs?issueId=${made.id}`);
  if (early.length) throw new Error(`a backlog task started ${early.length} run(s)`);
  const moved = await page.request.patch(`${s.base}/api/issues/${made.id}`, { data: { status: "todo" } });
  if (!moved.ok()) throw new Error(`move to todo: ${moved.status()}`);
  await page.waitForFunction(async ([cid, id]) => {
    const r = await fetch(`/api/companies/${cid}/heartbeat-runs?issueId=${id}`);
    return r.ok && (await r.json()).length > 0;
  }, [company.id, made.id], { polling: 200, timeout: 30000 });

  if (!tour) return;
  s.step("page weights: each page loaded cold, in a fresh browser context");
  mkdirSync(tour, { recursive: true });
  for (const [name, url] of pages) {
    const context = await s.browser.newContext({ viewport: { width: 1440, height: 900 } });
    const cold = await context.newPage();
    await cold.goto(s.base + url, { waitUntil: "load" });
    const [bytes, requests, ms] = await cold.evaluate(() => {
      const nav = performance.getEntriesByType("navigation")[0];
      const res = performance.getEntriesByType("resource");
      const bytes = res.reduce((n, r) => n + r.transferSize, nav.transferSize);
      return [bytes, res.length + 1, Math.round(nav.loadEventEnd)];
    });
    console.log(`weight: ${name} ${bytes} ${requests} ${ms}`);
    await context.close();
  }

  s.step("documentation screenshots, light and dark at 1440 px, light at 390 px");
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const [name, url] of pages) {
      await page.setViewportSize({ width: 1440, height: 900 });
      await page.goto(s.base + url, { waitUntil: "load" });
      await page.screenshot({ path: join(tour, `${name}-${scheme}.png`), animations: "disabled" });
      if (scheme === "light") {
        await page.setViewportSize({ width: 390, height: 844 });
        await page.screenshot({ path: join(tour, `${name}-phone.png`), animations: "disabled" });
      }
    }
  }
});
