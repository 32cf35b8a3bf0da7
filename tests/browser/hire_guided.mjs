// Guided agent setup. The hire dialog lists the coding CLIs the server has
// (with versions, under PAPERCLIP_REQUIRE_AGENT_CLIS=1 all of them); a process
// agent pointed at a script that is not there fails the check naming the
// path, with "Hire anyway" offered; the example-agent preset fills the form
// with the bundled script's real path and passes ("Hire anyway" gone); a
// taken name is announced before hiring; the model field suggests what the
// models route lists for the chosen type and still takes any id. Then a
// pending hire (made by the Rust side, company requiring approval) shows
// Approve, not Run now, on its page, and is approved from the inbox.
// Usage: node hire_guided.mjs <base-url> <screenshot-dir>
import { start } from "./lib.mjs";

const s = await start();
const { page } = s;
const must = (ok, what) => { if (!ok) throw new Error(what); };
const clisRequired = process.env.PAPERCLIP_REQUIRE_AGENT_CLIS === "1";

await s.finish(async () => {
  s.step("open the hire dialog: the server's CLIs are listed");
  await page.goto(s.base + "/");
  await page.waitForURL(/\/[A-Z]+\/dashboard$/);
  const prefix = await page.locator("body").getAttribute("data-prefix");
  await page.goto(`${s.base}/${prefix}/agents`);
  await page.click("[data-open-dialog=hire]");
  const rows = page.locator("#hire [data-cli]");
  await page.locator("#hire [data-cli=opencode_local]").waitFor();
  const kinds = ["claude_local", "codex_local", "opencode_local", "gemini_local", "pi_local"];
  must(await rows.count() === kinds.length, `expected ${kinds.length} CLI rows, saw ${await rows.count()}`);
  for (const kind of kinds) {
    const button = page.locator(`#hire [data-cli=${kind}] button[data-preset=${kind}]`);
    if (await button.count()) {
      const version = await button.locator(".version").innerText();
      must(/\d+\.\d+/.test(version), `${kind} shows no version: ${version}`);
      must(/✓|!/.test(await page.locator(`#hire [data-cli=${kind}] .preset-note`).innerText()),
        `${kind} says nothing about its login`);
    } else {
      must(!clisRequired, `${kind} is not detected, but PAPERCLIP_REQUIRE_AGENT_CLIS=1`);
    }
  }

  await s.shotBoth("hire-presets");

  s.step("the model field suggests the adapter's models and takes any id");
  const claudeModel = page.locator("#hire-claude_local-model");
  await claudeModel.focus();
  await page.waitForFunction(() =>
    document.querySelectorAll("#hire-claude_local-model-models option").length > 0);
  const offered = await page.$$eval("#hire-claude_local-model-models option", (os) => os.map((o) => o.value));
  must(offered.includes("claude-sonnet-4-6"), `claude models offered: ${offered}`);
  await claudeModel.fill("my-own-model-id");
  await page.waitForFunction(() =>
    document.querySelector("#hire [data-hire-json]").value.includes('"my-own-model-id"'));
  await claudeModel.fill("");
  await page.selectOption("#hire select[name=adapterType]", "opencode_local");
  await page.waitForFunction(() =>
    document.querySelectorAll("#hire-opencode_local-model-models option").length > 0);
  const ocIds = await page.$$eval("#hire-opencode_local-model-models option", (os) => os.map((o) => o.value));
  must(ocIds.every((id) => id.includes("/")), `opencode models are provider/model: ${ocIds}`);
  await page.locator("#hire-opencode_local-model").focus();
  await s.shot("hire-model-suggestions");

  s.step("a script that does not exist fails the check, naming it");
  await page.selectOption("#hire select[name=adapterType]", "process");
  await page.fill("#hire-process-command", "sh");
  await page.fill("#hire-process-args", "/home/me/agents/reveiw-agent.sh");
  await page.click("#hire [data-hire-check]");
  const report = page.locator("#hire-env");
  await page.locator("#hire-env.env-fail li.lvl-error",
    { hasText: "Script /home/me/agents/reveiw-agent.sh does not exist" }).waitFor();
  must(!/Ready/.test(await report.innerText()), "a failed check still says Ready");
  await page.locator("#hire .hire-anyway").waitFor({ state: "visible" });
  await s.shot("hire-missing-script");

  s.step("the example preset fills the real path and passes");
  await page.click("#hire button[data-preset=example]");
  await page.locator("#hire-env.env-pass", { hasText: "Ready" }).waitFor();
  await page.locator("#hire-env", { hasText: "Dry run: `sh -n`" }).waitFor();
  const args = await page.inputValue("#hire-process-args");
  must(/\/examples\/example-agent\.sh$/.test(args) && args.startsWith("/"), `example args: ${args}`);
  must(await page.locator("#hire .hire-anyway").isHidden(), "Hire anyway shown after a pass");
  must((await page.inputValue("#hire input[name=name]")) === "Example agent", "the preset named nobody");

  s.step("a taken name is announced before hiring");
  await page.fill("#hire input[name=name]", "casey");
  await page.locator("#hire [data-name-note]", { hasText: 'will be hired as "casey 2"' }).waitFor();
  await s.shot("hire-name-taken");
  await page.fill("#hire input[name=name]", "Scout");
  must(await page.locator("#hire [data-name-note]").isHidden(), "the note stayed for a free name");
  await report.scrollIntoViewIfNeeded();
  await s.shotBoth("hire-example-preset");

  if (await page.locator("#hire button[data-preset=claude_local]").count()) {
    s.step("a CLI preset's dry run is --version");
    await page.click("#hire button[data-preset=claude_local]");
    await page.locator("#hire-env", { hasText: "Dry run: `claude --version` answered" }).waitFor();
    must(await page.inputValue("#hire select[name=adapterType]") === "claude_local", "type not switched");
    await page.click("#hire button[data-preset=example]");
    await page.locator("#hire-env.env-pass").waitFor();
  }

  s.step("hire: the company needs approval, so Scout waits");
  await page.click("#hire button[type=submit]");
  await s.toast("Scout waits for board approval").waitFor();

  s.step("a pending agent's page offers Approve, not Run now");
  await page.goto(`${s.base}/${prefix}/agents/pending-pat`);
  await page.locator("[data-pending-hire]").waitFor();
  must(await page.locator("header.page-head button", { hasText: "Run now" }).count() === 0, "Run now offered");
  must(await page.locator("header.page-head button", { hasText: "Approve hire" }).count() === 1, "no Approve hire");
  await s.shot("pending-agent");

  s.step("the inbox names the hire and approves it inline");
  await page.goto(`${s.base}/${prefix}/inbox`);
  const row = page.locator("li[data-approval]", { hasText: "Hire Pending Pat" });
  await row.waitFor();
  const line = await row.innerText();
  must(line.includes("Claude Code") && line.includes("reports to Casey"), `hire row: ${line}`);
  await s.shotBoth("inbox-hire");
  await row.locator("button", { hasText: "Approve" }).click();
  await s.toast("Pending Pat is hired").waitFor();
  await row.waitFor({ state: "detached" });
});
