// Finding things in a real browser: the skip link is the first stop of the
// keyboard, Ctrl+K opens the command palette, an identifier + Enter opens
// its task, a word found only in a comment finds its task, the task list
// pages forward and back, and the board follows a dark colour scheme.
// The company (tasks, a comment with "zanzibarish", agents) is made by the
// Rust test before this runs. Usage: node find.mjs <base-url> <screenshot-dir>
import { start } from "./lib.mjs";

const s = await start();
const { page, base } = s;

const palette = () => page.locator("dialog#palette");
const openPalette = async () => {
  await page.keyboard.press("Control+k");
  await palette().waitFor({ state: "visible" });
  if (!(await page.evaluate(() => document.activeElement && document.activeElement.id === "palette-input"))) {
    throw new Error("the palette input is not focused");
  }
};

await s.finish(async () => {
  s.step("the first Tab from page load focuses the skip link");
  await page.goto(base + "/");
  const prefix = await page.evaluate(() => document.body.dataset.prefix);
  if (!prefix) throw new Error("no company prefix on the page");
  await page.keyboard.press("Tab");
  const focused = await page.evaluate(() => {
    const a = document.activeElement;
    return a && a.classList.contains("skip-link") ? a.getAttribute("href") : null;
  });
  if (focused !== "#live") throw new Error(`Tab focused ${focused}, not the skip link`);
  const box = await page.locator(".skip-link").boundingBox();
  if (!box || box.y < 0) throw new Error("the focused skip link is not visible");
  await page.keyboard.press("Enter");
  if (!(await page.evaluate(() => document.activeElement && document.activeElement.id === "live"))) {
    throw new Error("the skip link did not move focus to the main region");
  }

  s.step("Ctrl+K, an identifier and Enter open the task");
  await openPalette();
  await page.keyboard.type(`${prefix.toLowerCase()}-3`);
  await page.keyboard.press("Enter");
  await page.waitForURL(new RegExp(`/${prefix}/tasks/${prefix}-3$`));
  await page.locator("h1", { hasText: "Task 3" }).first().waitFor();

  s.step("a word only in a comment finds its task");
  await openPalette();
  await page.keyboard.type("zanzibarish");
  const hit = page.locator("#palette-list .palette-item", { hasText: `${prefix}-5` });
  await hit.waitFor();
  const first = await page.locator("#palette-list .palette-item.active").innerText();
  if (!first.includes(`${prefix}-5`)) throw new Error(`the first result is ${first}`);
  await s.shotBoth("palette");
  await page.keyboard.press("Enter");
  await page.waitForURL(new RegExp(`/${prefix}/tasks/${prefix}-5$`));

  s.step("arrows choose a page; Esc closes");
  await openPalette();
  await page.keyboard.type("org");
  await page.locator("#palette-list .palette-item", { hasText: "Org chart" }).waitFor();
  await page.keyboard.press("Escape");
  await palette().waitFor({ state: "hidden" });
  await openPalette();
  await page.keyboard.type("activ");
  await page.locator("#palette-list .palette-item.active", { hasText: "Activity" }).waitFor();
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("ArrowUp");
  await page.keyboard.press("Enter");
  await page.waitForURL(new RegExp(`/${prefix}/activity$`));

  s.step("the palette button in the sidebar opens it too");
  await page.locator("[data-open-palette]").click();
  await palette().waitFor({ state: "visible" });
  await page.keyboard.type("new task");
  await page.keyboard.press("Enter");
  await page.locator("dialog#new-task").waitFor({ state: "visible" });
  await page.keyboard.press("Escape");

  s.step("the task list pages forward and back, keeping its sort");
  await page.goto(`${base}/${prefix}/tasks?sort=oldest`);
  const firstRow = async () => (await page.locator("table.tasks tbody tr .ident").first().innerText()).trim();
  if ((await firstRow()) !== `${prefix}-1`) throw new Error(`oldest first starts at ${await firstRow()}`);
  await page.locator("[data-next-page]").click();
  await page.waitForURL(/cursor=/);
  if ((await firstRow()) !== `${prefix}-201`) throw new Error(`page 2 starts at ${await firstRow()}`);
  if (!page.url().includes("sort=oldest")) throw new Error("the sort was lost");
  await s.shotBoth("tasks-page-2");
  // On through all 1,000, 200 a page: the fifth page is the last.
  for (const start of [401, 601, 801]) {
    const before = page.url();
    await page.locator("[data-next-page]").click();
    await page.waitForURL((url) => url.href !== before);
    if ((await firstRow()) !== `${prefix}-${start}`) throw new Error(`a page starts at ${await firstRow()}, not ${prefix}-${start}`);
  }
  if (await page.locator("[data-next-page]").count()) throw new Error("a page after the last");
  const lastRow = (await page.locator("table.tasks tbody tr .ident").last().innerText()).trim();
  if (lastRow !== `${prefix}-1000`) throw new Error(`the last page ends at ${lastRow}`);
  const count = (await page.locator("[data-task-count]").getAttribute("data-task-count"));
  if (count !== "1000") throw new Error(`the count says ${count}`);
  await page.locator("[data-prev-page]").click();
  await page.waitForURL(/before=/);
  if ((await firstRow()) !== `${prefix}-601`) throw new Error(`back from the last page at ${await firstRow()}`);
  await page.locator("[data-first-page]").click();
  await page.waitForURL((url) => !/before=|cursor=/.test(url.search));
  if ((await firstRow()) !== `${prefix}-1`) throw new Error(`back on page 1 at ${await firstRow()}`);
  if (!page.url().includes("sort=oldest")) throw new Error("the sort was lost on the way back");
  await s.shotBoth("tasks");

  s.step("dark mode follows the system");
  await page.emulateMedia({ colorScheme: "dark" });
  await page.goto(`${base}/${prefix}/dashboard`);
  const bg = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  const [r, g, b] = bg.match(/\d+/g).map(Number);
  if (r + g + b > 150) throw new Error(`the dark page background is ${bg}`);
  const text = await page.evaluate(() => getComputedStyle(document.body).color);
  const [tr, tg, tb] = text.match(/\d+/g).map(Number);
  if (tr + tg + tb < 500) throw new Error(`dark mode text is ${text}`);
  await s.shotBoth("dashboard-dark");
  await page.goto(`${base}/${prefix}/activity`);
  await page.locator("table.activity .repeat").first().waitFor();
  await s.shotBoth("activity-dark");
  await page.goto(`${base}/${prefix}/org`);
  await page.locator("[data-org-root]").nth(1).waitFor();
  await s.shotBoth("org-dark");
  await page.goto(`${base}/${prefix}/tasks`);
  await s.shotBoth("tasks-dark");
  await openPalette();
  await page.keyboard.type("task 1");
  await page.locator("#palette-list .palette-item .ident").first().waitFor();
  await s.shotBoth("palette-dark");
  await page.keyboard.press("Escape");

  s.step("light mode screenshots of the activity feed and org chart");
  await page.emulateMedia({ colorScheme: "light" });
  await page.goto(`${base}/${prefix}/activity`);
  await s.shotBoth("activity");
  await page.goto(`${base}/${prefix}/org`);
  await s.shotBoth("org");
});
