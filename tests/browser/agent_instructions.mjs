// Agent instructions and the inbox's "Mine" section (issue 40): the agent
// page's editor saves AGENTS.md through the API (read back there), and in
// the inbox an unread task of the board's is marked, Mark read clears the
// mark, and Archive takes it out of the inbox.
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

await s.finish(async () => {
  s.step("an agent and a task of the board's");
  const company = await post("/api/companies", { name: "Instructions Works" });
  const cid = company.id;
  const p = company.issuePrefix;
  const agent = await post(`/api/companies/${cid}/agents`, { name: "Writer", adapterType: "process", adapterConfig: { command: "true" } });
  const task = await post(`/api/companies/${cid}/issues`, { title: "Choose the launch date", status: "todo" });

  s.step("the agent page's editor saves AGENTS.md");
  await page.goto(`${base}/${p}/agents/${agent.urlKey}`);
  const editor = page.locator("section[data-instructions] textarea[name=content]");
  await editor.waitFor();
  await editor.fill("# Writer\nAlways cite sources.\n");
  await s.shot("agent-instructions-edited");
  await page.click("section[data-instructions] button[type=submit]");
  await s.toast("AGENTS.md saved").first().waitFor();
  const file = await get(`/api/agents/${agent.id}/instructions-bundle/file?path=AGENTS.md`);
  if (file.content !== "# Writer\nAlways cite sources.\n") throw new Error(`saved ${JSON.stringify(file.content)}`);
  await page.goto(`${base}/${p}/agents/${agent.urlKey}`);
  const shown = await page.locator("section[data-instructions] textarea[name=content]").inputValue();
  if (!shown.includes("Always cite sources.")) throw new Error(`the editor shows ${JSON.stringify(shown)}`);

  s.step("the inbox marks the unread task; Mark read clears it; Archive takes it away");
  await page.goto(`${base}/${p}/inbox`);
  const row = page.locator(`section[data-mine] li[data-mine-issue="${task.identifier}"]`);
  await row.and(page.locator("[data-unread]")).waitFor();
  await s.shot("inbox-mine-unread");
  await row.getByRole("button", { name: "Mark read" }).click();
  await page.locator(`section[data-mine] li[data-mine-issue="${task.identifier}"]:not([data-unread])`).waitFor();
  await row.getByRole("button", { name: "Archive" }).click();
  await row.waitFor({ state: "detached" });
  await s.shot("inbox-mine-archived");
});
