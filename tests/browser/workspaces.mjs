// Execution workspaces in a real browser (issue 36): the board declares a
// project's repository in its dialog (a path that is not a git repository
// is refused, saying why, beside the form), adds a project with a
// repository from the projects list (a refused one adds nothing), then a
// `process` agent changes files in its task's worktree and the task's
// Changes view shows the files and the coloured diff; the run page says
// what the run changed and links there. Screenshots at desktop and phone
// width. Usage: node workspaces.mjs <base-url> <screenshot-dir>
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { start } from "./lib.mjs";

const s = await start();
const { page, base } = s;

async function api(method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { "content-type": "application/json", accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function until(what, probe, ms = 60000) {
  const end = Date.now() + ms;
  for (;;) {
    const got = await probe();
    if (got) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// A repository with one commit (README.md saying hello) on main.
function repository() {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "paperclip-ui-repo-")));
  const git = (...args) => execFileSync("git", ["-C", dir, ...args], { stdio: "pipe" });
  git("init", "-q", "-b", "main");
  git("config", "user.email", "dev@example.com");
  git("config", "user.name", "Dev");
  writeFileSync(join(dir, "README.md"), "hello\n");
  git("add", "README.md");
  git("commit", "-q", "-m", "first");
  return dir;
}

const repo = repository();
const plain = realpathSync(mkdtempSync(join(tmpdir(), "paperclip-ui-plain-")));

await s.finish(async () => {
  s.step("a company with a project that has no repository yet");
  const company = await api("POST", "/api/companies", { name: "Worktree Works" });
  const cid = company.id;
  const p = company.issuePrefix;
  const project = await api("POST", `/api/companies/${cid}/projects`, { name: "Storefront" });
  await page.goto(`${base}/${p}/projects/${project.urlKey}`);
  await page.locator("#live-state.on").waitFor();
  await page.locator("#codebase [data-no-repository]").waitFor();

  s.step("a path that is not a git repository is refused beside the form");
  await page.locator("#codebase [data-edit-repository]").click();
  const dialog = page.locator("#project-repository");
  await dialog.locator("input[name=cwd]").fill(plain);
  await dialog.locator("input[name=defaultRef]").fill("main");
  await dialog.locator("button[type=submit]").click();
  await dialog.locator(".form-error", { hasText: "is not inside a git repository" }).waitFor();
  if (!(await dialog.evaluate((d) => d.open))) throw new Error("the dialog closed on a refusal");
  await s.shot("repository-refused");
  if ((await api("GET", `/api/projects/${project.id}/workspaces`)).length) throw new Error("a refused path was saved");

  s.step("the repository is saved and shown");
  await dialog.locator("input[name=cwd]").fill(repo);
  await dialog.locator("button[type=submit]").click();
  await s.toast("Repository saved").first().waitFor();
  await page.locator("#codebase dd code", { hasText: repo }).waitFor();
  await page.locator("#codebase [data-default-branch=main]").waitFor();
  await s.shotBoth("project-codebase");

  s.step("the dialog opens filled in, and edits the same repository");
  await page.locator("#codebase [data-edit-repository]").click();
  await dialog.locator("input[name=cwd]").waitFor();
  if ((await dialog.locator("input[name=cwd]").inputValue()) !== repo) throw new Error("the dialog was not filled in");
  await dialog.locator("input[name=defaultRef]").fill("");
  await dialog.locator("button[type=submit]").click();
  await page.locator("#codebase [data-default-branch='']").waitFor();
  const declared = await api("GET", `/api/projects/${project.id}/workspaces`);
  if (declared.length !== 1 || declared[0].defaultRef !== null) throw new Error(`edited in place: ${JSON.stringify(declared)}`);

  s.step("a new project with a refused repository adds nothing");
  await page.goto(`${base}/${p}/projects`);
  const form = page.locator("form[data-api-form=project]");
  await form.locator("input[name=name]").fill("Backoffice");
  await form.locator("input[name=cwd]").fill(plain);
  await form.locator("button[type=submit]").click();
  await form.locator(".form-error", { hasText: "Repository refused" }).waitFor();
  const listed = await api("GET", `/api/companies/${cid}/projects`);
  if (listed.some((x) => x.name === "Backoffice")) throw new Error("the refused project was kept");

  s.step("with a good repository it is added with it");
  await form.locator("input[name=cwd]").fill(repo);
  await form.locator("button[type=submit]").click();
  await s.toast("Project added").first().waitFor();
  await page.locator("table.data a", { hasText: "Backoffice" }).waitFor();
  const backoffice = (await api("GET", `/api/companies/${cid}/projects`)).find((x) => x.name === "Backoffice");
  const its = await api("GET", `/api/projects/${backoffice.id}/workspaces`);
  if (its.length !== 1 || its[0].cwd !== repo) throw new Error(`no repository on the new project: ${JSON.stringify(its)}`);

  s.step("an agent changes files in its task's worktree");
  // Its first run edits README.md and adds two files, one long; a later
  // run adds a note.
  const script = [
    "if [ -f src/pricing.html ]; then echo 'a second look' > notes.txt; exit 0; fi",
    "printf 'hello world\\nnow with a pricing page\\n' > README.md",
    "mkdir -p src",
    "printf '<h1>Pricing</h1>\\n' > src/pricing.html",
    "seq 1 80 | sed 's/^/price row /' > src/prices.txt",
  ].join("\n");
  const agent = await api("POST", `/api/companies/${cid}/agents`, {
    name: "Builder", adapterType: "process", adapterConfig: { command: "sh", args: ["-c", script] },
  });
  const task = await api("POST", `/api/companies/${cid}/issues`, {
    title: "Add the pricing page", projectId: project.id, assigneeAgentId: agent.id, status: "todo",
  });
  const run = await until("the run to finish", async () => {
    const runs = await api("GET", `/api/companies/${cid}/heartbeat-runs?agentId=${agent.id}`);
    return runs.find((r) => r.status === "succeeded" || r.status === "failed");
  });
  if (run.status !== "succeeded") throw new Error(`the run failed: ${JSON.stringify(run)}`);
  const first = "changed 3 files, +83 \u22121";

  s.step("the task's Changes view: all changes first, files, then the patch");
  await page.goto(`${base}/${p}/tasks/${task.identifier}`);
  await page.locator("#live-state.on").waitFor();
  const changes = page.locator("#changes");
  await changes.locator(".changes-where code.branch", { hasText: task.identifier }).waitFor();
  const all = changes.locator("article.changes-task");
  await all.locator("h3", { hasText: "All changes on" }).waitFor();
  await all.locator(".change-summary", { hasText: first }).waitFor();
  await all.locator("tr[data-path='src/pricing.html'] .change-kind", { hasText: "added" }).waitFor();
  await all.locator("tr[data-path='README.md'] .change-kind", { hasText: "modified" }).waitFor();
  // A long patch starts collapsed and opens on a click.
  await all.locator("details.patch:not([open]) > summary").click();
  await all.locator("pre.diff .d-add", { hasText: "+<h1>Pricing</h1>" }).waitFor();
  await all.locator("pre.diff .d-del", { hasText: "-hello" }).waitFor();
  await all.locator("pre.diff .d-add", { hasText: "+now with a pricing page" }).waitFor();

  s.step("each run's changes, the same for the only run");
  const mine = changes.locator(`#changes-run-${run.id}`);
  await mine.locator(".change-summary", { hasText: first }).waitFor();
  await mine.locator("tr[data-path='src/prices.txt'] .change-kind", { hasText: "added" }).waitFor();
  await mine.locator("details.patch:not([open]) > summary", { hasText: "the same as all changes above" }).click();
  await mine.locator("pre.diff .d-add", { hasText: "+<h1>Pricing</h1>" }).waitFor();
  await mine.locator("pre.diff .d-del", { hasText: "-hello" }).waitFor();
  // Added and removed lines look different.
  const colour = (sel) => mine.locator(sel).first().evaluate((el) => getComputedStyle(el).backgroundColor);
  const [added, removed] = [await colour("pre.diff .d-add"), await colour("pre.diff .d-del")];
  if (added === removed || added === "rgba(0, 0, 0, 0)") throw new Error(`diff lines not coloured: ${added} / ${removed}`);

  s.step("live updates keep the patches the person opened open");
  // The comment wakes the agent; its run's changes are shown above the first's.
  await api("POST", `/api/issues/${task.id}/comments`, { body: "Looks good so far" });
  await page.locator(".comment-body", { hasText: "Looks good so far" }).waitFor();
  await changes.locator("article.changes-run").first().locator(".change-summary", { hasText: "changed 1 file, +1 \u22120" }).waitFor();
  await all.locator(".change-summary", { hasText: "changed 4 files, +84 \u22121" }).waitFor();
  if ((await changes.locator("article.changes-run").count()) !== 2) throw new Error("expected two runs' changes");
  for (const [what, part] of [["the run's", mine], ["the task's", all]]) {
    if (!(await part.locator("details.patch").evaluate((d) => d.open))) throw new Error(`${what} opened patch closed on a live update`);
  }
  const text = await changes.innerText();
  if (text.includes(task.id)) throw new Error("the Changes view shows the task's id");
  await s.shotBoth("task-changes");

  s.step("the run page says what the run changed and links to it");
  await page.goto(`${base}/${p}/agents/${agent.urlKey}/runs/${run.id}`);
  const line = page.locator("dd", { hasText: first });
  await line.waitFor();
  await s.shotBoth("run-changes");
  await line.locator("a", { hasText: "see the diff" }).click();
  await page.waitForURL((url) => url.pathname === `/${p}/tasks/${task.identifier}` && url.hash === `#changes-run-${run.id}`);
  await page.locator(`#changes-run-${run.id} .change-summary`).waitFor();
  // Kept on a failure, to look at.
  rmSync(repo, { recursive: true, force: true });
  rmSync(plain, { recursive: true, force: true });
});
