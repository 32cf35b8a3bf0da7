// The board shows the work (issue 37): every column's head in view at 1280
// and 1920 px, Done folded and unfolded (remembered), cards with priority,
// label, assignee, a running agent's live step and a blocked marker, lanes
// by assignee, "Me" in the assignee filter, and bulk changes on the board
// and in the list, where a transition that is not allowed is reported by
// the task's identifier while the others are changed.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { start } from "./lib.mjs";

const s = await start();
const { page, base, shots } = s;
const call = async (method, path, data) => {
  const res = await page.request.fetch(base + path, { method, data });
  if (!res.ok()) throw new Error(`${method} ${path}: ${res.status()} ${await res.text()}`);
  return res.json();
};
const release = join(shots, "release-runner");
const nextStep = join(shots, "next-step");
const check = (ok, what) => { if (!ok) throw new Error(what); };

// Every column head fully inside the viewport, and no sideways scrolling;
// measured in one go in the page, as a live re-render may replace them.
async function headsInView(width, height) {
  await page.setViewportSize({ width, height });
  const { heads, overflow } = await page.evaluate(() => ({
    heads: [...document.querySelectorAll("[data-board] [data-head]")].map((h) => {
      const r = h.getBoundingClientRect();
      return { name: h.dataset.head, x: r.x, y: r.y, right: r.right, bottom: r.bottom };
    }),
    overflow: (({ scrollWidth, clientWidth }) => scrollWidth - clientWidth)(document.querySelector("[data-board]")),
  }));
  check(heads.length === 7, `7 column heads, got ${heads.length}`);
  for (const h of heads) {
    check(h.x >= 0 && h.y >= 0 && h.right <= width && h.bottom <= height, `${h.name} head out of view at ${width}px: ${JSON.stringify(h)}`);
  }
  check(overflow <= 1, `the board scrolls sideways at ${width}px by ${overflow}px`);
}
const widthOf = (selector) => page.locator(selector).evaluate((el) => el.getBoundingClientRect().width);

await s.finish(async () => {
  try {
    s.step("a company with a running agent, a blocked task, a label and tasks of mine");
    const company = await call("POST", "/api/companies", { name: "Triage Works" });
    const cid = company.id;
    const p = company.issuePrefix;
    const bug = await call("POST", `/api/companies/${cid}/labels`, { name: "Bug", color: "#dc2626" });
    const wait = (file) => `while [ ! -e '${file}' ]; do sleep 0.2; done`;
    const script = `echo "working: step 2 of 6"; ${wait(nextStep)}; echo "working: step 3 of 6"; ${wait(release)}`;
    const runner = await call("POST", `/api/companies/${cid}/agents`, { name: "Runner", adapterType: "process", adapterConfig: { command: "sh", args: ["-c", script] } });
    const first = await call("POST", `/api/companies/${cid}/issues`, { title: "Design the schema", status: "todo" });
    const running = await call("POST", `/api/companies/${cid}/issues`, {
      title: "Fix the login crash", status: "todo", priority: "critical", labelIds: [bug.id],
      blockedByIssueIds: [first.id], assigneeAgentId: runner.id,
    });
    const mine = await call("POST", `/api/companies/${cid}/issues`, { title: "Review the pricing copy", status: "in_review", assigneeUserId: "local-board" });
    const later = await call("POST", `/api/companies/${cid}/issues`, { title: "Plan the offsite", status: "backlog" });
    await call("POST", `/api/companies/${cid}/issues`, { title: "Old idea", status: "cancelled" });
    await call("POST", `/api/companies/${cid}/issues`, { title: "Ship v1", status: "done" });
    const triage = [];
    for (const n of [1, 2, 3]) triage.push(await call("POST", `/api/companies/${cid}/issues`, { title: `Triage item ${n}`, status: "todo", priority: "low" }));

    s.step("every column head is in view at 1280 and 1920 px");
    await page.goto(`${base}/${p}/tasks?view=board`);
    await page.locator("#live-state.on").waitFor();
    await headsInView(1280, 800);
    // Cancelled starts folded: a narrow strip that still names it and counts.
    const cancelled = page.locator("section.column[data-column=cancelled]");
    check(await cancelled.evaluate((c) => c.classList.contains("collapsed")), "cancelled starts folded");
    check((await cancelled.locator(".column-head").innerText()).replace(/\s+/g, " ").includes("Cancelled 1"), "the strip names Cancelled and its count");

    s.step("a card shows priority, label, assignee, the running step and its blocker");
    const card = page.locator(`.task-card[data-identifier=${running.identifier}]`);
    await card.locator(".card-run .run-step", { hasText: "working: step 2 of 6" }).waitFor();
    check((await card.locator(".prio").getAttribute("class")) === "prio p-critical", "critical priority");
    check((await card.locator(".prio").innerText()).trim() === "critical", "the priority's word");
    check((await card.locator(".label-chip").innerText()).trim() === "Bug", "the label chip");
    check((await card.locator(".assignee.agent").innerText()).includes("Runner"), "the agent assignee");
    check((await card.locator(".blocked-mark").innerText()).includes(`Blocked by ${first.identifier}`), "the blocked marker");
    check((await card.locator(".card-run .run-who").innerText()).trim() === "Runner", "who is running");
    check((await page.locator(`.task-card[data-identifier=${mine.identifier}] .assignee.person`).innerText()).includes("Me"), "a person assignee");
    // The step follows the agent's output live.
    writeFileSync(nextStep, "");
    await card.locator(".card-run .run-step", { hasText: "working: step 3 of 6" }).waitFor();
    await s.shot("board-1280");
    await page.setViewportSize({ width: 1920, height: 1080 });
    await headsInView(1920, 1080);
    await s.shot("board-1920");

    s.step("Done folds to a strip, stays folded after a reload, and unfolds");
    await page.setViewportSize({ width: 1280, height: 800 });
    const done = page.locator("section.column[data-column=done]");
    await page.click("[data-collapse=done]");
    await page.locator("section.column[data-column=done].collapsed").waitFor();
    check((await widthOf("section.column[data-column=done]")) < 60, "a folded column is a narrow strip");
    await page.reload();
    await page.locator("section.column[data-column=done].collapsed").waitFor();
    await headsInView(1280, 800);
    await done.locator(".column-head").click();
    await page.locator("section.column[data-column=done]:not(.collapsed)").waitFor();
    await page.locator(`section.column[data-column=done] .task-card`).first().waitFor();

    s.step("\"Me\" in the assignee filter shows my tasks only");
    await page.selectOption("form.filters select[name=assignee]", "me");
    await page.waitForURL(/assignee=me/);
    await page.locator(`.task-card[data-identifier=${mine.identifier}]`).waitFor();
    check((await page.locator(".task-card").count()) === 1, "only my task under Me");

    s.step("lanes by assignee");
    await page.goto(`${base}/${p}/tasks?view=board&group=assignee`);
    await page.locator(`[data-lane="user:local-board"] .task-card[data-identifier=${mine.identifier}]`).waitFor();
    await page.locator(`[data-lane="${runner.id}"] .task-card[data-identifier=${running.identifier}]`).waitFor();
    check((await page.locator("[data-lane] .lane-title").first().innerText()).startsWith("Me"), "my lane first");
    check((await page.locator("form.filters select[name=group]").inputValue()) === "assignee", "the lanes choice is shown");
    await headsInView(1280, 800);
    await s.shot("board-lanes");

    s.step("three cards selected (a Shift range) move to In progress and to me");
    await page.goto(`${base}/${p}/tasks?view=board`);
    await page.locator("#live-state.on").waitFor();
    const box = (issue) => page.locator(`.task-card[data-identifier=${issue.identifier}] input[data-select]`);
    await box(triage[2]).click();
    await box(triage[0]).click({ modifiers: ["Shift"] });
    await page.locator("[data-bulk-count]", { hasText: "3 selected" }).waitFor();
    await page.selectOption("[data-bulk-field=status]", "in_progress");
    await page.selectOption("[data-bulk-field=assignee]", "user:local-board");
    await s.shot("board-bulk");
    await page.click("[data-bulk-apply]");
    await s.toast("Moved 3 tasks to In progress, assigned to Me (board)").first().waitFor();
    for (const t of triage) {
      const now = await call("GET", `/api/issues/${t.id}`);
      check(now.status === "in_progress" && now.assigneeUserId === "local-board" && now.assigneeAgentId === null,
        `${t.identifier}: ${now.status} ${now.assigneeUserId}`);
    }
    await page.locator(`section.column[data-column=in_progress] .task-card[data-identifier=${triage[1].identifier}]`).waitFor();
    await page.locator("[data-bulk-bar]").waitFor({ state: "hidden" });

    s.step("in the list, a move one task may not make is reported by its identifier");
    await page.goto(`${base}/${p}/tasks`);
    await page.locator("#live-state.on").waitFor();
    await page.locator(`tr[data-issue-id="${later.id}"] input[data-select]`).click();
    await page.locator(`tr[data-issue-id="${first.id}"] input[data-select]`).click();
    await page.selectOption("[data-bulk-field=status]", "blocked");
    await page.selectOption("[data-bulk-field=label]", bug.id);
    await page.click("[data-bulk-apply]");
    await s.toast("Moved 1 task to Blocked, labelled Bug").first().waitFor();
    const failed = page.locator(`[data-bulk-report] li[data-failed="${later.identifier}"]`);
    await failed.waitFor();
    check((await failed.innerText()).includes("Cannot transition issue from backlog to blocked"), "the reason is given");
    await page.locator("[data-bulk-count]", { hasText: "1 selected" }).waitFor();
    const moved = await call("GET", `/api/issues/${first.id}`);
    check(moved.status === "blocked" && moved.labelIds.includes(bug.id), `${first.identifier}: ${moved.status} ${moved.labelIds}`);
    check((await call("GET", `/api/issues/${later.id}`)).status === "backlog", "the refused task is unchanged");
    await s.shot("list-bulk-report");
  } finally {
    writeFileSync(release, "");
  }
});
