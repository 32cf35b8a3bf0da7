// Editing an agent's configuration with the hire form's fields. The agent
// "Builder" (process, command "true", plus a key no field shows) is set up
// by the Rust test. A person changes the command through its field, the JSON
// view follows, the environment check fails in words, the save goes through
// with a warning, and after a reload the field shows the saved command.
// Usage: node agent_config.mjs <base-url> <screenshot-dir>
import { start } from "./lib.mjs";

const s = await start();
const { page } = s;
const must = (ok, what) => { if (!ok) throw new Error(what); };

await s.finish(async () => {
  s.step("open the agent");
  const companies = await (await page.request.get(`${s.base}/api/companies`)).json();
  const prefix = companies[0].issuePrefix;
  await page.goto(`${s.base}/${prefix}/agents/builder`);
  const command = page.locator("#cfg-process-command");
  must((await command.inputValue()) === "true", "the command field is not filled from the config");
  must(await page.locator("form.config fieldset[data-adapter=claude_local]").isHidden(), "another type's fields shown");

  s.step("change the command through its field; the JSON view follows");
  await command.fill("no-such-agent-cli-xyz");
  await page.click("form.config details.advanced summary");
  const json = JSON.parse(await page.inputValue("form.config textarea[data-hire-json]"));
  must(json.command === "no-such-agent-cli-xyz", `JSON view: ${JSON.stringify(json)}`);
  must(json.bootstrapPromptTemplate === "keep-me", "the JSON view lost a key no field shows");

  s.step("check the environment: it fails, in words");
  await page.click("form.config [data-hire-check]");
  const report = page.locator("#cfg-env.env-fail");
  await report.locator("li", { hasText: "`no-such-agent-cli-xyz` is not installed or not on PATH" }).waitFor();
  await report.locator(".hint", { hasText: "How to fix" }).first().waitFor();
  await s.shotBoth("agent-config");

  s.step("a live re-render keeps the unsaved change and the report");
  const agentId = await page.getAttribute("form.config", "data-agent-id");
  await page.request.post(`${s.base}/api/agents/${agentId}/wakeup`, { data: { reason: "manual" } });
  await page.locator("#live-body tr[data-run-status]").first().waitFor();
  must((await command.inputValue()) === "no-such-agent-cli-xyz", "a re-render lost the edited command");
  await page.locator("#cfg-env.env-fail", { hasText: "not installed" }).waitFor();

  s.step("save: warned, not blocked");
  await page.click("form.config button[type=submit]");
  await s.toast("Configuration saved").waitFor();
  await s.toast("Saved, but the environment check failed").waitFor();
  // The re-rendered page still shows why runs will fail.
  await page.locator("#cfg-env.env-fail", { hasText: "not installed" }).waitFor();

  s.step("reload: the field shows the saved command");
  await page.reload();
  must((await page.locator("#cfg-process-command").inputValue()) === "no-such-agent-cli-xyz",
    "the saved command is not shown after a reload");
  must(await page.locator("#cfg-env").isHidden(), "a report was shown before any check");
});
