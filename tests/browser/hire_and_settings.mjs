// Hiring through the form, checked first, and the company settings page.
// A person fills a claude_local hire whose working directory does not exist:
// the environment check fails in words and blocks the hire; switching to a
// process agent with a command that exists hires it. Then the company is
// renamed in settings and the sidebar shows the new name; it is archived
// and restored from the danger zone.
// Usage: node hire_and_settings.mjs <base-url> <screenshot-dir>
import { start } from "./lib.mjs";

const s = await start();
const { page } = s;
const must = (ok, what) => { if (!ok) throw new Error(what); };

await s.finish(async () => {
  s.step("create the company");
  await page.goto(s.base + "/");
  await page.fill("form[data-api-form=new-company] input[name=name]", "Globex");
  await page.click("form[data-api-form=new-company] button[type=submit]");
  await page.waitForURL(/\/[A-Z]+\/dashboard$/);
  const prefix = await page.locator("body").getAttribute("data-prefix");
  const companyId = await page.locator("body").getAttribute("data-company-id");

  s.step("fill a claude_local hire: fields and JSON stay in step");
  await page.goto(`${s.base}/${prefix}/agents`);
  await page.click("[data-open-dialog=hire]");
  await page.fill("#hire input[name=name]", "Coder");
  await page.selectOption("#hire select[name=adapterType]", "claude_local");
  await page.locator("#hire fieldset[data-adapter=claude_local]").waitFor({ state: "visible" });
  must(await page.locator("#hire fieldset[data-adapter=process]").isHidden(), "process fields shown for claude_local");
  await page.fill("#hire-claude_local-cwd", "/no/such/repo");
  await page.click("#hire details.advanced summary");
  const json = () => page.inputValue("#hire textarea[data-hire-json]").then(JSON.parse);
  must((await json()).cwd === "/no/such/repo", "the JSON view does not show the cwd field");
  await page.fill("#hire textarea[data-hire-json]", JSON.stringify({ cwd: "/no/such/repo", maxTurnsPerRun: 5 }));
  must((await page.inputValue("#hire-claude_local-maxTurnsPerRun")) === "5", "a JSON edit did not reach the fields");

  s.step("hiring runs the environment check, which fails and blocks");
  await page.click("#hire button[type=submit]");
  await page.locator("#hire-env.env-fail", { hasText: "Working directory /no/such/repo does not exist" }).waitFor();
  await page.locator("#hire-env", { hasText: "How to fix: Create it" }).waitFor();
  await s.toast("The environment check failed").waitFor();
  must(await page.locator("#hire").evaluate((d) => d.open), "the dialog closed on a failed check");
  await page.locator("#hire .hire-anyway").waitFor({ state: "visible" });
  await s.shotBoth("hire-dialog-check-failed");

  s.step("a process agent needs its command");
  await page.selectOption("#hire select[name=adapterType]", "process");
  must((await page.inputValue("#hire-process-cwd")) === "/no/such/repo", "cwd was not carried over");
  must(await page.locator("#hire-env").isHidden(), "a stale report stayed after switching type");
  await page.fill("#hire-process-cwd", "");
  await page.click("#hire button[type=submit]");
  await page.locator("#hire .hire-field[data-key=command] .field-error", { hasText: "Command is required" }).waitFor();

  s.step("fix it, check, and hire");
  await page.fill("#hire-process-command", "true");
  must(JSON.stringify(await json()) === JSON.stringify({ command: "true" }), `JSON view: ${JSON.stringify(await json())}`);
  await page.click("#hire [data-hire-check]");
  await page.locator("#hire-env.env-pass", { hasText: "Ready" }).waitFor();
  await s.shotBoth("hire-dialog-check-passed");
  await page.click("#hire button[type=submit]");
  await s.toast("Coder is hired").waitFor();
  await page.locator("#live-body table.data tr", { hasText: "Coder" }).waitFor();
  must(!(await page.locator("#hire").evaluate((d) => d.open)), "the dialog stayed open after hiring");
  must(await page.locator("#hire select[name=reportsTo] option", { hasText: "Coder" }).count() === 1,
    "the new agent is not offered as the next hire's manager");

  s.step("rename the company in settings");
  await page.click(`ul.nav a[href="/${prefix}/company/settings"]`);
  await page.waitForURL(/\/company\/settings$/);
  must((await page.locator("#company-id").innerText()).trim() === companyId, "the page shows another company id");
  await page.click("[data-copy='#company-id']");
  await page.locator("#toasts .toast", { hasText: /Company id copied|Ctrl\+C/ }).waitFor();
  await page.fill("form.settings input[name=name]", "");
  await page.click("form.settings button[type=submit]");
  await s.toast("a company needs a name").waitFor();
  await page.fill("form.settings input[name=name]", "Globex Corporation");
  await page.fill("form.settings input[name=budgetDollars]", "250");
  await page.click("form.settings button[type=submit]");
  await s.toast("Settings saved").waitFor();
  await page.locator("#company-switcher option:checked", { hasText: "Globex Corporation" }).waitFor({ state: "attached" });
  await page.locator("#live-body .page-head", { hasText: "Globex Corporation" }).waitFor();

  s.step("after a reload the new name and budget stay");
  await page.reload();
  must((await page.inputValue("form.settings input[name=budgetDollars]")) === "250.00", "budget not saved");
  await page.locator("#company-switcher option:checked", { hasText: "Globex Corporation" }).waitFor({ state: "attached" });
  await s.shotBoth("company-settings");

  s.step("archive the company, then restore it");
  await page.click("[data-company-status=archived]");
  await s.toast("Company archived").waitFor();
  await page.locator("[data-company-status=active]", { hasText: "Restore company" }).waitFor();
  await page.locator("#live-body .pill", { hasText: /archived/i }).waitFor();
  await page.click("[data-company-status=active]");
  await s.toast("Company restored").waitFor();
  await page.locator("[data-company-status=archived]").waitFor();
});
