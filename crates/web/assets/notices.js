// Failures and requests reach the person wherever they are in the board: a
// run that fails or times out, or an approval asked for, anywhere in the
// company shows a toast that links to it (the Inbox badge comes with the
// page's live re-render). Built on app.js's `window.Paperclip`.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;

  // A toast with a link; stays longer than a plain one, and a person can
  // close it.
  function notice(text, href, linkText, kind) {
    const box = P.$("#toasts");
    if (!box) return;
    const el = document.createElement("div");
    el.className = `toast notice ${kind}`;
    el.setAttribute("role", kind === "error" ? "alert" : "status");
    const span = document.createElement("span");
    span.textContent = text + " ";
    const a = document.createElement("a");
    a.href = href;
    a.textContent = linkText;
    const close = document.createElement("button");
    close.type = "button";
    close.className = "small link";
    close.setAttribute("aria-label", "Close");
    close.textContent = "×";
    close.addEventListener("click", () => el.remove());
    el.append(span, a, close);
    box.appendChild(el);
    setTimeout(() => el.remove(), 15000);
  }

  // Read and unread in the inbox, per browser: what arrived after the
  // person's previous visit is marked New; opening the inbox reads it.
  const SEEN_KEY = `paperclip:inbox-seen:${P.companyId}`;
  let lastVisit = null;
  function markUnread() {
    if (lastVisit === null) return;
    for (const item of P.$$(".inbox-item[data-at]")) {
      const unread = item.dataset.at > lastVisit;
      item.classList.toggle("unread", unread);
      if (unread && !item.querySelector(".new-tag")) {
        const tag = document.createElement("span");
        tag.className = "new-tag";
        tag.textContent = "New";
        item.prepend(tag);
      }
    }
  }
  document.addEventListener("DOMContentLoaded", () => {
    if (!P.$("[data-failures]")) return;
    lastVisit = localStorage.getItem(SEEN_KEY) || "";
    markUnread();
    localStorage.setItem(SEEN_KEY, new Date().toISOString());
  });
  // Items that arrive while the inbox is open stay New until the next visit.
  document.addEventListener("paperclip:refreshed", markUnread);

  const seen = new Set();

  P.onEvent(async (kind, event) => {
    const data = (event && event.payload) || {};
    if (kind === "heartbeat.run.finished" && (data.status === "failed" || data.status === "timed_out")) {
      if (seen.has(data.runId)) return;
      seen.add(data.runId);
      let who = "An agent";
      let where = "";
      try {
        const agent = await P.api("GET", `/api/agents/${data.agentId}`);
        who = agent.name;
        if (data.issueId) {
          const issue = await P.api("GET", `/api/issues/${data.issueId}`);
          where = ` on ${issue.identifier}`;
        }
      } catch (_) { /* the toast still says what happened */ }
      const verb = data.status === "timed_out" ? "timed out" : "failed";
      const why = data.errorCode ? ` (${data.errorCode})` : "";
      notice(`${who} ${verb}${where}${why}.`, `/${P.prefix}/agents/${data.agentId}/runs/${data.runId}`, "Open the run", "error");
    } else if (kind === "activity.appended" && data.action === "approval.created") {
      notice("An approval is waiting for you.", `/${P.prefix}/approvals/${data.entityId}`, "Review it", "info");
    }
  });
})();
