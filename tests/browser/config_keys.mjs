// An agent's config kept from before unknown keys were refused (issue 38).
// The agent "Legacy" (process, with `legacyKnob` that no adapter knows) is
// set up by the Rust test (config_keys.rs). A person saves its config form
// unchanged: the save is refused, and the reason, naming the key, is shown
// below the JSON view, not only in a passing toast; it stays through a live
// re-render. The person removes the key in the JSON view and saves again.
// Usage: node config_keys.mjs <base-url> <screenshot-dir>
import { start } from "./lib.mjs";

const s = await start();
const { page } = s;
const must = (ok, what) => { if (!ok) throw new Error(what); };

await s.finish(async () => {
  s.step("open the agent");
  const companies = await (await page.request.get(`${s.base}/api/companies`)).json();
  const prefix = companies[0].issuePrefix;
  await page.goto(`${s.base}/${prefix}/agents/legacy`);
  const box = page.locator("form.config [data-config-error]");
  must(await box.isHidden(), "a refusal shown before any save");

  s.step("save unchanged: refused, the key named beside the config");
  await page.click("form.config button[type=submit]");
  await box.waitFor();
  const text = await box.innerText();
  must(text.includes("legacyKnob: unknown key for process"), `the refusal says: ${text}`);
  must(text.includes("Remove or fix it in the JSON above"), `no way out in: ${text}`);
  must(await page.locator("form.config details.advanced").evaluate((d) => d.open), "the JSON view is closed");
  await s.toast("unknown key for process: legacyKnob").waitFor();
  // The environment check, run before the save, says so too.
  await page.locator("#cfg-env.env-fail", { hasText: "adapterConfig.legacyKnob: unknown key" }).waitFor();
  await s.shotBoth("refused");

  s.step("a live re-render keeps the refusal");
  const agentId = await page.getAttribute("form.config", "data-agent-id");
  await page.request.post(`${s.base}/api/agents/${agentId}/wakeup`, { data: { reason: "manual" } });
  await page.locator("#live-body tr[data-run-status]").first().waitFor();
  await page.locator("form.config [data-config-error]", { hasText: "legacyKnob" }).waitFor();

  s.step("remove the key in the JSON view: the refusal goes; the save goes through");
  const area = page.locator("form.config textarea[data-hire-json]");
  const config = JSON.parse(await area.inputValue());
  must(config.legacyKnob === 3, `the JSON view: ${JSON.stringify(config)}`);
  delete config.legacyKnob;
  await area.fill(JSON.stringify(config, null, 2));
  must(await box.isHidden(), "the refusal outlived the edit that fixes it");
  await page.click("form.config button[type=submit]");
  await s.toast("Configuration saved").waitFor();
  await s.shot("saved");
});
