// A person answers an agent's question from the board: the question shows
// in the inbox and as a card in the task's thread; the person picks an
// option, types a note, sends it, and the card shows the answer.
import { start } from "./lib.mjs";

const s = await start();
const { page, base } = s;
const get = async (path) => {
  const res = await page.request.get(base + path);
  if (!res.ok()) throw new Error(`GET ${path}: ${res.status()} ${await res.text()}`);
  return res.json();
};

await s.finish(async () => {
  s.step("the agent's question waits in the inbox");
  const companies = await get("/api/companies");
  const company = companies.find((c) => c.name === "Question Co");
  if (!company) throw new Error(`no Question Co in ${JSON.stringify(companies)}`);
  const p = company.issuePrefix;
  await page.goto(`${base}/${p}/inbox`);
  const item = page.locator("[data-asked] .inbox-item").first();
  await item.waitFor();
  const text = await item.textContent();
  if (!text.includes("Which database")) throw new Error(`inbox item says: ${text}`);
  await s.shot("inbox-question");

  s.step("the card in the task's thread");
  await item.locator("a.button", { hasText: "Answer" }).click();
  const card = page.locator("article.interaction[data-interaction-status=pending]");
  await card.waitFor();
  await page.locator("#live-state.on").waitFor();
  await s.shotBoth("question-card");

  s.step("answer it");
  await card.locator("label.option", { hasText: "Postgres" }).locator("input").check();
  await card.locator("input[name='text:notes']").fill("Keep it boring and well indexed");
  await card.locator("button[type=submit]", { hasText: "Send answers" }).click();
  await s.toast("Answer sent").first().waitFor();
  const answered = page.locator("article.interaction[data-interaction-status=answered]");
  await answered.waitFor();
  const shown = await answered.locator(".answer").textContent();
  if (!shown.includes("Postgres") || !shown.includes("Keep it boring")) throw new Error(`the card shows: ${shown}`);
  await s.shot("question-answered");
});
