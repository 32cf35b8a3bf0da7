// Agent Chat in the board (issue 41): a person opens Chat from the
// navigation, starts a chat with a process agent, writes, watches the
// agent's output stream in and its reply arrive without a reload, starts a
// fresh session with `/new` (a "New session" divider), and makes a message
// an ordinary task whose card leads to it. Then a chat with a real `claude`
// (the Rust test made its company, "Claude Chat", and scripted its turns):
// its turn streams in while it waits on a gate, its reply arrives, and a
// message after `/new` gets a reply from a fresh session.
// Usage: node agent_chat.mjs <base-url> <screenshot-dir>
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

// The agent's turn: a line of output, then (once the page has shown it: a
// gate file per run, bounded) its reply as a comment on the chat.
const SCRIPT = [
  `set -e`,
  `echo "reading your message"`,
  `n=0; while [ ! -e "${join(shots, "gate-")}$PAPERCLIP_RUN_ID" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n+1)); done`,
  `curl -sS -f -X POST -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'content-type: application/json' "$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID/comments" -d '{"body":"Here is my answer: the notes are drafted."}' >/dev/null`,
].join("\n");

const send = async (text) => {
  await page.fill("#chat-body", text);
  await page.click("#chat-composer button[type=submit]");
};

await s.finish(async () => {
  s.step("a person opens Chat and starts a chat with an agent");
  const company = await api("POST", "/api/companies", { name: "Chat Works" });
  const p = company.issuePrefix;
  await api("POST", `/api/companies/${company.id}/projects`, { name: "Launch" });
  await api("POST", `/api/companies/${company.id}/agents`, {
    name: "Coder", adapterType: "process", adapterConfig: { command: "sh", args: ["-c", SCRIPT] },
  });
  await page.goto(`${base}/${p}/dashboard`);
  await page.click("nav .nav a[data-icon=chats]");
  await page.locator("h1", { hasText: "Chat" }).waitFor();
  await s.shot("chats-empty");
  await page.selectOption("#chat-agent", { label: "Coder" });
  await page.click("#chat-start button[type=submit]");
  await page.waitForURL(`${base}/${p}/chats/coder`);
  await page.locator("h1", { hasText: "Chat with Coder" }).waitFor();
  await page.locator("#live-state.on").waitFor();
  await page.evaluate(() => { window.__sameDocument = true; });

  s.step("a message; the agent's output streams in, then its reply");
  await send("Please write the release notes\nFor version 2, short.");
  await page.locator(".chat-msg.mine", { hasText: "Please write the release notes" }).waitFor();
  const live = page.locator(".chat-live .stream-box");
  await live.locator("pre.stream", { hasText: "reading your message" }).waitFor({ timeout: 30000 });
  const runId = await live.getAttribute("data-stream-run");
  await s.shot("streaming");
  writeFileSync(join(shots, `gate-${runId}`), "");
  await page.locator(".chat-msg.agent", { hasText: "Here is my answer" }).waitFor({ timeout: 30000 });
  if (!(await page.evaluate(() => window.__sameDocument))) throw new Error("the page reloaded");
  await page.locator(".chat-live").waitFor({ state: "detached", timeout: 30000 });
  await s.shot("reply");

  s.step("/new starts a fresh session, shown as a divider");
  await send("/new");
  await page.locator(".chat-divider", { hasText: "New session" }).waitFor();
  const chat = await api("GET", `/api/companies/${company.id}/chats/coder`);
  if (chat.conversationSessionGeneration !== 1) throw new Error(`generation ${chat.conversationSessionGeneration}`);
  await s.shot("new-session");

  s.step("a message becomes a task, shown as a card that leads to it");
  await page.locator(".chat-msg.mine", { hasText: "Please write the release notes" })
    .locator("[data-chat-make-task]").click();
  const card = page.locator(".chat-card a[data-chat-task-link]");
  await card.waitFor();
  const label = await card.innerText();
  if (!new RegExp(`^${p}-\\d+ Please write the release notes$`).test(label)) throw new Error(`the card reads "${label}"`);
  if (/[0-9a-f]{8}-[0-9a-f]{4}/.test(await page.locator("#chat-thread").innerText())) throw new Error("a UUID in the chat");
  await s.shot("task-card");
  await card.click();
  await page.waitForURL(new RegExp(`/${p}/tasks/${p}-\\d+$`));
  await page.locator("h1", { hasText: "Please write the release notes" }).waitFor();
  await page.locator(".description", { hasText: "For version 2, short." }).waitFor();
  await s.shot("the-task");

  s.step("a chat with a real claude: its turn streams in, then its reply");
  const cc = (await api("GET", "/api/companies")).find((c) => c.name === "Claude Chat");
  if (!cc) throw new Error("the Rust test's company is missing");
  await page.goto(`${base}/${cc.issuePrefix}/chats`);
  await page.selectOption("#chat-agent", { label: "Claude" });
  await page.click("#chat-start button[type=submit]");
  await page.waitForURL(`${base}/${cc.issuePrefix}/chats/claude`);
  await page.locator("#live-state.on").waitFor();
  await send("Plan the launch");
  // Its turn reads as steps (a tool row for its command), never raw JSON.
  const claudeLive = page.locator(".chat-live", { has: page.locator(".steps", { hasText: "claude-gate-" }) });
  await claudeLive.waitFor({ timeout: 90000 });
  if (/"type":"assistant"/.test(await claudeLive.innerText())) throw new Error("raw JSON in the chat");
  await s.shot("claude-streaming");
  const firstTurn = await claudeLive.getAttribute("data-run-id");
  writeFileSync(join(shots, `claude-gate-${firstTurn}`), "");
  await page.locator(".chat-msg.agent", { hasText: "Claude here: the plan is three steps." })
    .waitFor({ timeout: 90000 });
  await s.shot("claude-reply");

  s.step("/new, then a message: claude answers from a fresh session");
  await send("/new");
  await page.locator(".chat-divider", { hasText: "New session" }).waitFor();
  await send("Start over with the docs");
  // The next turn's own steps (the first may still be ending when it starts).
  const again = page.locator(`.chat-live:not([data-run-id="${firstTurn}"])`, { has: page.locator(".steps", { hasText: "claude-gate-" }) });
  await again.waitFor({ timeout: 90000 });
  writeFileSync(join(shots, `claude-gate-${await again.getAttribute("data-run-id")}`), "");
  await page.locator(".chat-msg.agent", { hasText: "Fresh start: what shall we do?" })
    .waitFor({ timeout: 90000 });
  await s.shot("claude-fresh-session");
});
