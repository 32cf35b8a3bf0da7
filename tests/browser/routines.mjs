// Routines as a person uses them: the empty state explains them; the form
// makes one (a schedule in the browser's timezone, a policy in words); the
// list shows its schedule and next run; Run now makes a run whose task is
// shown by identifier; pause and resume; a webhook's secret is shown once
// and stays through live re-renders; a restore makes a deleted webhook again
// with a new secret.
import { start } from "./lib.mjs";

const s = await start();
const { base } = s;
// The scenario's own page (in Berlin's timezone) replaces lib.mjs's.
const post = async (path, data, method = "POST") => {
  const res = await s.page.request.fetch(base + path, { method, data });
  if (!res.ok()) throw new Error(`${method} ${path}: ${res.status()} ${await res.text()}`);
  return res.json();
};

await s.finish(async () => {
  s.step("a company with an agent, in Berlin's timezone");
  await s.context.close();
  const ctx = await s.browser.newContext({ viewport: { width: 1280, height: 860 }, timezoneId: "Europe/Berlin" });
  const p2 = await ctx.newPage();
  p2.on("pageerror", (e) => s.problems.push(`page error: ${e.message}`));
  p2.on("dialog", (d) => d.accept());
  s.page = p2;
  const page = p2;
  s.shot = (name) => page.screenshot({ path: `${s.shots}/${name}.png`, fullPage: true, animations: "disabled" });
  s.shotBoth = async (name) => {
    await s.shot(name);
    await page.setViewportSize({ width: 390, height: 800 });
    await s.shot(`phone-${name}`);
    await page.setViewportSize({ width: 1280, height: 860 });
  };
  s.toast = (text) => page.locator("#toasts .toast", { hasText: text });
  const company = await post("/api/companies", { name: "Routine Works" });
  const p = company.issuePrefix;
  await post(`/api/companies/${company.id}/agents`, { name: "Reporter", adapterType: "process", adapterConfig: { command: "true" } });

  s.step("the empty state explains routines");
  await page.goto(`${base}/${p}/dashboard`);
  await page.click(`nav.sidebar a[href="/${p}/routines"]`);
  await page.locator("#routines-empty", { hasText: "A routine is work that comes back" }).waitFor();
  await page.locator("#live-state.on").waitFor();
  const zone = await page.inputValue("#routine-form input[name=timezone]");
  if (zone !== "Europe/Berlin") throw new Error(`timezone not defaulted to the browser's: ${zone}`);
  await s.shotBoth("routines-empty");

  s.step("a bad schedule is refused beside the form");
  await page.fill("#routine-form input[name=title]", "Weekday standup notes");
  await page.fill("#routine-form textarea[name=description]", "Summarise what **changed** yesterday.");
  await page.selectOption("#routine-form select[name=assigneeAgentId]", { label: "Reporter" });
  await page.fill("#routine-form input[name=cronExpression]", "every morning");
  await page.click("#routine-form button[type=submit]");
  await page.locator("#routine-form-error", { hasText: "5 fields" }).waitFor();

  s.step("the server's refusal (an unknown timezone) is shown beside the form");
  await page.fill("#routine-form input[name=cronExpression]", "30 8 * * 1-5");
  await page.selectOption("#routine-form select[name=concurrencyPolicy]", { label: "Skip while one is running" });
  await page.selectOption("#routine-form select[name=activityGatePolicy]", { label: "Skip it (no task, no tokens)" });
  await page.fill("#routine-form input[name=timezone]", "Mars/Olympus");
  await page.click("#routine-form button[type=submit]");
  await page.locator("#routine-form-error", { hasText: "Invalid timezone" }).waitFor();
  await s.shotBoth("routines-refused");

  s.step("create the routine with the form (the routine made before is reused)");
  await page.fill("#routine-form input[name=timezone]", "Europe/Berlin");
  await page.click("#routine-form button[type=submit]");
  await s.toast("Routine Weekday standup notes created").first().waitFor();
  const row = page.locator("#routines tr[data-routine-id]", { hasText: "Weekday standup notes" });
  await row.waitFor();
  await row.locator(".triggers", { hasText: "Every weekday 08:30" }).waitFor();
  await row.locator(".triggers", { hasText: "Europe/Berlin" }).waitFor();
  await row.locator(".next-run time", { hasText: /^in / }).waitFor();
  await row.locator(".last-run", { hasText: "never run" }).waitFor();
  await s.shotBoth("routines-list");

  s.step("open it and run it now");
  await row.locator("a", { hasText: "Weekday standup notes" }).click();
  await page.locator("h1", { hasText: "Weekday standup notes" }).waitFor();
  await page.locator("#live-state.on").waitFor();
  await page.click("#routine-actions button:has-text('Run now')");
  await s.toast("Run started").first().waitFor();
  const run = page.locator("#routine-runs tr[data-routine-run]").first();
  await run.locator("a .ident", { hasText: new RegExp(`^${p}-\\d+$`) }).waitFor();
  const ident = await run.locator("a .ident").textContent();
  await page.locator("#routine-revisions tr[data-revision]").first().waitFor();
  await s.shotBoth("routine-detail");

  s.step("pause and resume");
  await page.click("#routine-actions button:has-text('Pause')");
  await page.locator("h1 .pill", { hasText: "paused" }).waitFor();
  await page.click("#routine-actions button:has-text('Resume')");
  await page.locator("h1 .pill", { hasText: "active" }).waitFor();

  s.step("a change made elsewhere shows up live (routine activity is broadcast)");
  const rid = page.url().split("/").pop();
  await post(`/api/routines/${rid}`, { title: "Weekday standup summary" }, "PATCH");
  await page.locator("h1", { hasText: "Weekday standup summary" }).waitFor();
  await page.locator("#routine-revisions tr[data-revision]", { hasText: "title" }).first().waitFor();

  s.step("add a webhook trigger: its secret is shown once");
  await page.selectOption("#trigger-form select[name=kind]", "webhook");
  await page.click("#trigger-form button[type=submit]");
  await page.locator("#webhook-secret-value").waitFor();
  const secret = (await page.locator("#webhook-secret-value").textContent()).trim();
  if (!/^[0-9a-f]{48}$/.test(secret)) throw new Error(`unexpected secret: ${secret}`);
  await page.locator("#routine-triggers tr[data-kind=webhook]").waitFor();
  // A change made elsewhere re-renders the page live; the secret must stay.
  await post(`/api/routines/${rid}`, { title: "Weekday standup digest" }, "PATCH");
  await page.locator("h1", { hasText: "Weekday standup digest" }).waitFor();
  if (!(await page.locator("#webhook-secret-value").isVisible())) throw new Error("the secret went with the page's re-render");
  await s.shotBoth("routine-webhook");
  await page.reload();
  await page.locator("#routine-triggers tr[data-kind=webhook]").waitFor();
  if ((await page.content()).includes(secret)) throw new Error("the webhook secret is on the page after a reload");

  s.step("delete the webhook, then restore the revision that had it: a new secret, shown once");
  const withHook = await page.locator("#routine-revisions tr[data-revision]").first().getAttribute("data-revision");
  await page.locator("#routine-triggers tr[data-kind=webhook] button:has-text('Delete')").click();
  await s.toast("Trigger deleted").first().waitFor();
  await page.locator("#routine-triggers tr[data-kind=webhook]").waitFor({ state: "detached" });
  await page.locator(`#routine-revisions tr[data-revision="${withHook}"] button:has-text('Restore')`).click();
  await s.toast(`Revision ${withHook} restored`).first().waitFor();
  await page.locator("#webhook-secret h2", { hasText: "Webhook made again" }).waitFor();
  await page.locator("#routine-triggers tr[data-kind=webhook]").waitFor();
  const again = (await page.locator("#webhook-secret-value").textContent()).trim();
  if (!/^[0-9a-f]{48}$/.test(again) || again === secret) throw new Error(`unexpected new secret: ${again}`);
  await s.shot("routine-restored-webhook");

  s.step("the task the run made opens from its identifier");
  await page.locator(`#routine-runs a:has-text("${ident}")`).first().click();
  await page.locator("h1", { hasText: "Weekday standup notes" }).waitFor();
  await page.locator(".ident", { hasText: ident }).first().waitFor();
  await ctx.close();
});
