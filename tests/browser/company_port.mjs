// Company packages on the board: the settings page exports the company as a
// download, imports it back (a dry run listed first, then applied), and the
// New company dialog starts a company from a starter template.
import { start } from "./lib.mjs";

const s = await start();
const { page, base } = s;
const post = async (path, data) => {
  const res = await page.request.fetch(base + path, { method: "POST", data });
  if (!res.ok()) throw new Error(`POST ${path}: ${res.status()} ${await res.text()}`);
  return res.json();
};
const get = async (path) => (await page.request.get(base + path)).json();

await s.finish(async () => {
  s.step("a company with an agent, a goal and a task");
  const company = await post("/api/companies", { name: "Port Board" });
  const cid = company.id;
  await post(`/api/companies/${cid}/agents`, { name: "Scout", adapterType: "process", adapterConfig: { command: "true" } });
  await post(`/api/companies/${cid}/goals`, { title: "Map the market", level: "company" });
  await post(`/api/companies/${cid}/issues`, { title: "List competitors", status: "backlog" });

  s.step("Export downloads the package");
  await page.goto(`${base}/${company.issuePrefix}/company/settings`);
  await page.locator("#company-port").waitFor();
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("[data-port-export]")]);
  if (download.suggestedFilename() !== "port-board.json") throw new Error(`downloaded ${download.suggestedFilename()}`);
  const file = `${s.shots}/port-board.json`;
  await download.saveAs(file);
  await s.toast("Exported").first().waitFor();

  s.step("importing it back lists the changes first, then applies them");
  await page.setInputFiles("#company-port input[name=file]", file);
  await page.locator("#port-plan", { hasText: "files read" }).waitFor();
  await page.selectOption("[data-port-collision]", "rename");
  await page.click("[data-port-preview]");
  await page.locator("#port-plan li", { hasText: "Create Scout 2" }).waitFor();
  await page.locator("#port-plan li", { hasText: "Create List competitors" }).waitFor();
  if ((await get(`/api/companies/${cid}/agents`)).length !== 1) throw new Error("the preview wrote");
  await page.locator("#company-port").scrollIntoViewIfNeeded();
  await s.shotBoth("import-preview");
  await page.click("[data-port-apply]");
  await s.toast("Import applied").first().waitFor();
  await page.locator("#port-plan", { hasText: "Imported: 1 agents" }).waitFor();
  const agents = await get(`/api/companies/${cid}/agents`);
  if (agents.length !== 2) throw new Error(`${agents.length} agents after the import`);

  s.step("a starter template makes a company");
  await page.goto(`${base}/${company.issuePrefix}/dashboard`);
  await page.evaluate(() => document.querySelector("#new-company").showModal());
  await page.locator("#new-company [data-company-template=content-studio]").waitFor();
  await s.shot("new-company-templates");
  await page.click("#new-company [data-company-template=content-studio]");
  await page.waitForURL((u) => u.pathname.endsWith("/dashboard") && !u.pathname.startsWith(`/${company.issuePrefix}/`));
  // The new company's dashboard names it under the page title.
  await page.getByText("Content Studio — An editor and a writer").waitFor();
  await s.shot("template-company");
});
