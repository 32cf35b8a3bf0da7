// Hiring on a local model: the hire dialog lists the models of Ollama as the
// server detected it (the scripted provider posing as Ollama), one click
// builds a pi_local config with the provider written in and the environment
// check pings the model server; the hired agent works a task with the real
// `pi`, and the costs page shows its tokens at $0 under local models, apart
// from a paid provider's spend.
import { start } from "./lib.mjs";

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
const must = (ok, what) => { if (!ok) throw new Error(what); };

await s.finish(async () => {
  s.step("a company, and a paid provider's spend to tell apart");
  const company = await post("/api/companies", { name: "Local Labs" });
  const cid = company.id;
  const p = company.issuePrefix;
  await post(`/api/companies/${cid}/cost-events`, { provider: "anthropic", model: "claude-sonnet-4-5", inputTokens: 5000, outputTokens: 900, costCents: 250 });

  s.step("the hire dialog lists the detected Ollama's models");
  await page.goto(`${base}/${p}/agents`);
  await page.locator("#live-state.on").waitFor();
  await page.click("[data-open-dialog=hire]");
  const model = page.locator('#hire [data-local-model="qwen3:8b"]');
  await model.waitFor();
  await page.locator('#hire [data-local-model="phi:1b"]').waitFor();
  const status = await page.locator("#hire [data-local-status]").textContent();
  must(/2 models on 1 server/.test(status), `status: ${status}`);
  await page.locator("#hire [data-local-server=detected-ollama]").first().waitFor();
  must((await page.locator("#hire .local-server").first().textContent()).includes("$0 · free"), "the detected Ollama is not shown as free");
  await s.shot("hire-local-models");

  s.step("a server is added by URL; a bad URL is refused in words");
  await page.click("#hire details.local-add summary");
  await page.fill('#hire [data-local-field="name"]', "GPU box");
  await page.fill('#hire [data-local-field="baseUrl"]', "gpu-box:8000");
  await page.click("#hire [data-local-add]");
  await page.locator("#hire [data-local-error]", { hasText: "must start with http" }).waitFor();
  await page.fill('#hire [data-local-field="baseUrl"]', "http://127.0.0.1:9/v1");
  await page.fill('#hire [data-local-field="apiKey"]', "sk-gpu-box-key");
  await page.click("#hire [data-local-add]");
  await s.toast("Added GPU box").waitFor();
  const gpu = page.locator("#hire .local-server.down", { hasText: "GPU box" });
  await gpu.waitFor();
  must((await gpu.textContent()).includes("Not answering"), "an unreachable server is not said to be down");
  must(!(await page.content()).includes("sk-gpu-box-key"), "the key is still on the page");
  await s.shot("hire-local-added");

  s.step("one click writes the config and checks the model server");
  await model.click();
  await page.locator("#hire [data-env-report]:not([hidden])").waitFor();
  await page.locator("#hire [data-env-report]", { hasText: "one-token completion with qwen3:8b worked" }).waitFor({ timeout: 60000 });
  must((await page.inputValue("#hire select[name=adapterType]")) === "pi_local", "the type is not pi_local");
  must((await page.inputValue("#hire input[name=name]")) === "Qwen3", "no name was suggested");
  const config = JSON.parse(await page.inputValue("#hire textarea[data-hire-json]"));
  must(config.model === "ollama/qwen3:8b", `model ${config.model}`);
  const providers = JSON.parse(config.env.PAPERCLIP_PI_PROVIDERS);
  must(providers.ollama.models[0].cost.input === 0, "not priced at zero");
  await s.shot("hire-local-checked");
  const report = await page.locator("#hire [data-env-report]").textContent();
  console.log(`report: ${report.replace(/\s+/g, " ").slice(0, 600)}`);
  if (await page.locator("#hire .hire-anyway").isVisible()) {
    throw new Error(`the environment check failed: ${report}`);
  }

  s.step("hire, and the agent works a task on the local model");
  await page.click("#hire button[type=submit]");
  await s.toast("Qwen3 is hired").waitFor();
  const agents = await get(`/api/companies/${cid}/agents`);
  const agent = agents.find((a) => a.name === "Qwen3");
  must(agent && agent.adapterType === "pi_local", "no pi_local agent");
  const task = await post(`/api/companies/${cid}/issues`, { title: "Summarise the readme", status: "todo", assigneeAgentId: agent.id });
  await page.goto(`${base}/${p}/tasks/${task.identifier}`);
  await page.locator("#live-state.on").waitFor();
  await page.locator("aside.properties .pill[data-status=done]").waitFor({ timeout: 90000 });
  await page.locator("article.comment", { hasText: "Done on a local model." }).waitFor();
  await s.shot("task-done-locally");

  s.step("the costs page shows local tokens at $0 apart from paid spend");
  // The agent marks its task done before its run ends and its usage is
  // recorded: wait for the tokens, not for the task.
  const deadline = Date.now() + 30000;
  while (!((await get(`/api/companies/${cid}/costs/local-models`)).local?.inputTokens > 0)) {
    must(Date.now() < deadline, "the local run's tokens were never recorded");
    await new Promise((r) => setTimeout(r, 200));
  }
  await page.goto(`${base}/${p}/costs`);
  const local = page.locator("[data-local-spend] [data-spend=local]");
  await local.waitFor();
  const localText = await local.textContent();
  must(localText.includes("$0.00"), `local: ${localText}`);
  must(/[1-9][\d,]* in/.test(localText), `local tokens: ${localText}`);
  const paid = await page.locator("[data-local-spend] [data-spend=paid]").textContent();
  must(paid.includes("$2.50"), `paid: ${paid}`);
  const row = page.locator("[data-local-spend] tr[data-provider=ollama]");
  must((await row.textContent()).includes("Local model"), "ollama is not on the local side");
  await page.locator("[data-local-spend]").scrollIntoViewIfNeeded();
  await s.shot("costs-local-and-paid");
});
