// The rest of seed 004 in the browser: the prompt editor's pills (credentials
// marked sensitive) and its live preview with credentials masked; the board
// falling back to short polling while its live event stream is blocked, and
// still seeing a run start, report a coloured status and finish; the run
// page's status line.
import { start } from "./lib.mjs";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

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
  s.step("a process agent that reports its status and waits for a go");
  const company = await post("/api/companies", { name: "Status Works" });
  const cid = company.id;
  const p = company.issuePrefix;
  const go = join(mkdtempSync(join(tmpdir(), "runspec-")), "go");
  const script = [
    "echo 'PAPERCLIP_STATUS: yellow waiting for the go'",
    'while [ ! -f "$GO" ]; do sleep 0.1; done',
    "echo 'PAPERCLIP_STATUS: green shipped'",
  ].join("\n");
  const agent = await post(`/api/companies/${cid}/agents`, {
    name: "Shipper", adapterType: "process",
    adapterConfig: { command: "sh", args: ["-c", script], env: { GO: go }, promptTemplate: "You are {{agent.name}}." },
  });

  s.step("the prompt editor: pills, the sensitive ones marked, and a preview");
  await page.goto(`${base}/${p}/agents/${agent.urlKey}`);
  const editor = page.locator(".template-editor");
  const preview = editor.locator("[data-prompt-preview]");
  await preview.filter({ hasText: "You are Shipper." }).waitFor();
  const key = editor.locator("[data-insert-var='credentials.apiKey']");
  if (!(await key.locator(".sensitive-badge").isVisible())) throw new Error("credentials.apiKey is not marked sensitive");
  if (await editor.locator("[data-insert-var='run.startedAt'] .sensitive-badge").count()) throw new Error("run.startedAt is marked sensitive");
  await editor.locator("[data-insert-var='paperclip.skill']").waitFor();
  await editor.locator("textarea[data-template]").focus();
  await page.keyboard.press("End");
  await page.keyboard.type(" Started {{run.startedAt}}. Key: ");
  await key.click();
  await preview.filter({ hasText: "Key: [credentials.apiKey: resolved at run time, hidden]" }).waitFor();
  await editor.locator("[data-sensitive-warning]", { hasText: "credentials.apiKey" }).waitFor();
  const shown = await preview.textContent();
  if (!/Started \d{4}-\d\d-\d\dT/.test(shown)) throw new Error(`run.startedAt not filled: ${shown}`);
  await s.shot("prompt-preview");
  await page.keyboard.type(" {{agent.secret}}");
  await preview.filter({ hasText: "No preview: Unknown template variable {{agent.secret}}" }).waitFor();

  s.step("the live stream blocked: the board says so and polls");
  await page.route("**/api/companies/*/events**", (route) => route.abort());
  await page.goto(`${base}/${p}/dashboard`);
  const live = page.locator("#live-state");
  await live.filter({ hasText: "checking every 3 s" }).waitFor({ timeout: 15000 });
  const card = page.locator(`.agent-card[data-live-agent="${agent.id}"]`);
  await card.locator(".pill[data-status=idle]").waitFor();

  s.step("a run starts, reports a yellow status and finishes, seen by polling alone");
  await post(`/api/agents/${agent.id}/wakeup`, { source: "on_demand", reason: "runspec" });
  await card.locator("[data-status-line=yellow]", { hasText: "waiting for the go" }).waitFor({ timeout: 20000 });
  await card.locator(".pill[data-status=running]").waitFor();
  await s.shot("dashboard-polling");
  writeFileSync(go, "");
  await card.locator(".pill[data-status=idle]").waitFor({ timeout: 20000 });
  if (await card.locator("[data-status-line]").count()) throw new Error("a finished run's status stays on the card");
  if (!(await live.textContent()).includes("checking every 3 s")) throw new Error("the polling indicator went away while the stream is blocked");

  s.step("the stream back: live again");
  await page.unroute("**/api/companies/*/events**");
  await page.locator("#live-state.on").waitFor({ timeout: 20000 });

  s.step("the run page shows its last status in its colour");
  const runs = await get(`/api/companies/${cid}/heartbeat-runs?agentId=${agent.id}`);
  if (runs[0].status !== "succeeded") throw new Error(`run ${runs[0].status}`);
  await page.goto(`${base}/${p}/agents/${agent.urlKey}/runs/${runs[0].id}`);
  await page.locator(".run-status-line [data-status-line=green]", { hasText: "shipped" }).waitFor();
  await s.shot("run-status");
});
