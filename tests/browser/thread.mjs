// The task thread is where a person watches: a process agent's output lines
// appear in its run card one by one while it runs (and survive the page's
// live re-renders), then the card says how long it ran and what it changed;
// a person's @mention wakes a run that did nothing, and its line says so.
// Then a real `claude` run (started by the Rust test, if the CLI is here)
// reads as a transcript: tool calls folded to a line of a verb and its
// object (a failed one with ✗ and its error), a subagent's calls nested
// under its Delegated row, one final reply set apart,
// and the task's identifier where the agent wrote its UUID. Usage: node thread.mjs <base-url> <screenshot-dir>
import { start } from "./lib.mjs";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const s = await start();
const { page, base, shots } = s;
const api = async (method, path, data) => {
  const res = await page.request.fetch(base + path, { method, data });
  if (!res.ok()) throw new Error(`${method} ${path}: ${res.status()} ${await res.text()}`);
  return res.json();
};

// Each line waits for the page to have seen the one before (a file this
// scenario writes), so "one by one" does not depend on timing.
const gate = (i) => join(shots, `line-${i}`);
const SCRIPT = [
  `set -e`,
  `api() { curl -sS -f -X "$1" -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'content-type: application/json' "$PAPERCLIP_API_URL$2" -d "$3"; }`,
  `[ "$PAPERCLIP_WAKE_REASON" = issue_assigned ] || { echo "nothing to do for $PAPERCLIP_WAKE_REASON"; exit 0; }`,
  `api POST "/api/issues/$PAPERCLIP_TASK_ID/checkout" "{\\"agentId\\":\\"$PAPERCLIP_AGENT_ID\\",\\"expectedStatuses\\":[\\"todo\\"]}" >/dev/null`,
  `for i in 1 2 3; do echo "step $i of 3: writing section $i"; n=0; while [ ! -e "${join(shots, "line-")}$i" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done; done`,
  `echo "a note on stderr" >&2`,
  `api POST "/api/issues/$PAPERCLIP_TASK_ID/comments" '{"body":"Shipped in three steps."}' >/dev/null`,
  `api PATCH "/api/issues/$PAPERCLIP_TASK_ID" '{"status":"done"}' >/dev/null`,
  `echo "all done"`,
].join("\n");

await s.finish(async () => {
  s.step("a process agent is given a task");
  const company = await api("POST", "/api/companies", { name: "Stream Works" });
  const p = company.issuePrefix;
  const agent = await api("POST", `/api/companies/${company.id}/agents`, {
    name: "Builder", adapterType: "process", adapterConfig: { command: "sh", args: ["-c", SCRIPT] },
  });
  const task = await api("POST", `/api/companies/${company.id}/issues`, { title: "Write the guide", status: "todo", assigneeAgentId: agent.id });
  await page.goto(`${base}/${p}/tasks/${task.identifier}`);
  await page.locator("#live-state.on").waitFor();
  await page.evaluate(() => { window.__sameDocument = true; });

  s.step("its lines appear one by one while it runs");
  const running = page.locator("details.run[data-run-status=running]");
  await running.waitFor({ timeout: 30000 });
  const runId = await running.getAttribute("data-run-id");
  const card = page.locator(`details.run[data-run-id="${runId}"]`);
  const line = (text) => card.locator(".stream-box pre.stream .line", { hasText: text });
  await line("step 1 of 3").waitFor({ timeout: 20000 });
  if (await line("step 2 of 3").count()) throw new Error("line 2 before its gate");
  let run = await api("GET", `/api/heartbeat-runs/${runId}`);
  if (run.status !== "running") throw new Error(`the first line showed only once the run was ${run.status}`);
  const clock = await card.locator(".run-took").innerText();
  if (!/^running for \d+ s$/.test(clock)) throw new Error(`the running clock reads "${clock}"`);
  writeFileSync(gate(1), "");
  await line("step 2 of 3").waitFor({ timeout: 20000 });
  // A person's @mention while it works (the composer is outside the live region).
  await page.fill("form.composer textarea[name=body]", "@Builder please also add a glossary");
  await page.click("form.composer button.primary[type=submit]");
  await s.toast("Comment posted").first().waitFor();
  await page.locator("article.comment", { hasText: "please also add a glossary" }).waitFor();
  // The re-render the comment caused kept the streamed lines, once each.
  if ((await line("step 1 of 3").count()) !== 1) throw new Error("the streamed lines were wiped or doubled by a re-render");
  run = await api("GET", `/api/heartbeat-runs/${runId}`);
  if (run.status !== "running") throw new Error(`the run is ${run.status} before its last lines`);
  await s.shot("live-output");

  s.step("finished, its line says how long it ran and what it changed");
  writeFileSync(gate(2), "");
  writeFileSync(gate(3), "");
  await page.locator(`details.run[data-run-id="${runId}"][data-run-status=succeeded]`).waitFor({ timeout: 30000 });
  const outcome = await card.locator("summary .outcome").innerText();
  if (!outcome.includes("moved it to done") || !outcome.includes("posted a comment")) throw new Error(`outcome reads "${outcome}"`);
  const took = await card.locator("summary .run-took").innerText();
  if (!/^ran \d+(\.\d)? (ms|s)$|^ran \d+ min \d+ s$/.test(took)) throw new Error(`duration reads "${took}"`);
  // The streamed box is kept: every line, stderr marked as such.
  const kept = await card.locator(".stream-box pre.stream").evaluate((pre) => ({
    text: pre.textContent, err: [...pre.querySelectorAll(".log-err")].map((e) => e.textContent),
  }));
  for (const want of ["step 1 of 3", "step 3 of 3", "all done"]) {
    if (!kept.text.includes(want)) throw new Error(`the output lost "${want}": ${kept.text}`);
  }
  if (!kept.err.some((t) => t.includes("a note on stderr"))) throw new Error(`stderr not marked: ${JSON.stringify(kept.err)}`);

  s.step("the @mention's run did nothing, and says so");
  const mention = page.locator("details.run", { has: page.locator(".run-why", { hasText: "Woken by a person's @mention" }) });
  await mention.locator(".outcome[data-outcome=nothing]").waitFor({ timeout: 30000 });
  const nothing = await mention.locator(".outcome").innerText();
  if (!nothing.startsWith("did nothing: ")) throw new Error(`the no-op run reads "${nothing}"`);
  if (!(await page.evaluate(() => window.__sameDocument === true))) throw new Error("the task page reloaded");
  await s.shotBoth("finished-runs");
  // Its page says the same, with the liveness verdict.
  await mention.locator("a.run-page-link").click();
  await page.locator("dd[data-liveness=completed]").waitFor();
  await page.locator("dd[data-wake]", { hasText: "Woken by a person's @mention" }).waitFor();
  await s.shot("run-page-no-op");

  s.step("the CLI run reads as a transcript");
  const companies = await api("GET", "/api/companies");
  const cli = companies.find((c) => c.name === "Transcript Co");
  if (!cli) {
    console.log("step: no claude CLI here: the transcript part is skipped");
    return;
  }
  const [cliTask] = await api("GET", `/api/companies/${cli.id}/issues`);
  await page.goto(`${base}/${cli.issuePrefix}/tasks/${cliTask.identifier}`);
  const done = page.locator("details.run[data-run-status=succeeded], details.run[data-run-status=failed]");
  await done.first().waitFor({ timeout: 150000 });
  const cliRun = page.locator("details.run").first();
  if ((await cliRun.getAttribute("data-run-status")) !== "succeeded") {
    throw new Error(`the claude run failed: ${await cliRun.innerText()}`);
  }
  // Folded, the card leads with the final reply, the task's UUID in it
  // named by its identifier.
  const ident = cliTask.identifier;
  await cliRun.locator("summary .reply-excerpt", { hasText: `Wrote the changelog for ${ident} and marked the task done.` }).waitFor();
  await cliRun.locator(":scope > summary").click();
  const reply = cliRun.locator("li.final-reply");
  if ((await reply.count()) !== 1) throw new Error(`${await reply.count()} final replies`);
  await reply.locator("strong", { hasText: "changelog" }).waitFor();
  await reply.locator(`a[href="/${cli.issuePrefix}/tasks/${ident}"]`, { hasText: ident }).waitFor();
  // Each tool call is one line: a verb and its object, closed.
  const tools = cliRun.locator("details.tool");
  if ((await tools.count()) < 4) throw new Error(`${await tools.count()} tool lines`);
  const first = tools.first();
  if ((await first.locator(".tool-verb").innerText()) !== "Ran") throw new Error("the call has no verb");
  if (!(await first.locator(".tool-arg").innerText()).includes("/checkout")) throw new Error("the tool line lacks its command");
  const tall = await tools.locator(":scope > summary").evaluateAll((rows) => rows
    .filter((r) => r.getBoundingClientRect().height > 1.8 * r.querySelector(".tool-verb").getBoundingClientRect().height)
    .map((r) => r.textContent));
  if (tall.length) throw new Error(`tool rows over a line: ${JSON.stringify(tall)}`);
  // The read of a missing file failed: ✗ and the error's first line.
  const read = cliRun.locator("details.tool[data-verb=Read]");
  await read.locator(".tool-arg", { hasText: "/nonexistent-paperclip-dir/NOTES.md" }).waitFor();
  const failedRow = await read.locator(".tool-state.failed").innerText();
  if (!failedRow.startsWith("✗ ") || failedRow.length < 4) throw new Error(`the failed read reads "${failedRow}"`);
  // The subagent's calls are nested under its Delegated row.
  const delegated = cliRun.locator("details.tool[data-verb=Delegated]");
  await delegated.locator(":scope > summary .tool-place", { hasText: "Check the notes" }).waitFor();
  if (await delegated.locator("ol.substeps").isVisible()) throw new Error("the subagent's steps should start folded");
  await delegated.locator(":scope > summary").click();
  await delegated.locator("ol.substeps details.tool[data-verb=Ran] .tool-arg", { hasText: "echo subagent checked" }).waitFor();
  // The subagent's prompt is not something it said; its report is the call's output.
  if (await delegated.locator("ol.substeps li.transcript-assistant", { hasText: "Check the notes." }).count()) throw new Error("the subagent's prompt reads as its words");
  await delegated.locator(":scope > .tool-io > pre", { hasText: "The notes are missing." }).waitFor();
  if (await first.locator(".tool-io").isVisible()) throw new Error("a tool call should start folded");
  await first.locator(":scope > summary").click();
  await first.locator(".tool-io pre", { hasText: "curl" }).first().waitFor();
  const output = await first.locator(".tool-io pre").nth(1).innerText();
  if (!output.includes(cliTask.identifier)) throw new Error(`the checkout's output is not shown: ${output}`);
  // The CLI's JSON lines are not the thread: they stay folded under "Raw log".
  const raw = cliRun.locator("details.raw");
  if (await raw.evaluate((d) => d.open)) throw new Error("the raw JSON log should be folded");
  const steps = await cliRun.locator("ol.steps:not(.substeps)").innerText();
  if (steps.includes('"type":')) throw new Error(`raw JSON in the transcript: ${steps}`);
  // The agent's comment named its task by UUID: the thread shows the identifier.
  const comment = page.locator("article.comment", { hasText: `Changelog written for ${ident}.` });
  await comment.locator(`a[href="/${cli.issuePrefix}/tasks/${ident}"]`).waitFor();
  const prose = (await page.locator("section.comments").innerText()) + (await reply.innerText()) + (await cliRun.locator("summary .reply-excerpt").textContent());
  if (prose.includes(cliTask.id)) throw new Error(`a UUID in agent text: ${prose}`);
  await s.shot("cli-transcript");
  await page.emulateMedia({ colorScheme: "dark" });
  await s.shotBoth("cli-transcript-dark");
  await page.emulateMedia({ colorScheme: "light" });

  s.step("the task's context row says how full the agent's session is");
  // The session is saved with the run's end; a fresh load has its row.
  await page.reload();
  const contextRow = page.locator("aside.properties dd.context-row");
  await contextRow.locator(".context-label", { hasText: /^\d+ % · \S+ of 200k tokens$/ }).waitFor();
  await contextRow.getByRole("button", { name: "Compact now" }).waitFor();
  await contextRow.scrollIntoViewIfNeeded();
  await s.shot("context-row");
});
