// The task board and list (pages/tasks.rs, board.rs): cards dragged or
// moved with ←/→ to an allowed status, Done and Cancelled folded to a strip
// (remembered in this browser), cards and rows selected (Shift for a range)
// and changed together from the bulk bar, one PATCH /api/issues/:id each,
// and a running card's step following the live log.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { $, $$, api, act, toast } = P;
  const words = (status) => status.replace("_", " ");

  // ---- moving one card -------------------------------------------------------

  // A card's columns are its own lane's (lanes repeat the columns).
  const rowOf = (card) => card.closest(".board-row") || $("[data-board]");
  const columnOrder = (card) => $$("[data-column]", rowOf(card)).map((c) => c.dataset.column);

  async function moveCard(card, to) {
    const allowed = (card.dataset.allowed || "").split(" ").filter(Boolean);
    if (!allowed.includes(to)) {
      toast(`${card.dataset.identifier} cannot move from ${words(card.dataset.status)} to ${words(to)}`, "error");
      return;
    }
    const column = $(`[data-column="${to}"] .cards`, rowOf(card)) || $(`[data-column="${to}"]`, rowOf(card));
    if (column) column.appendChild(card);
    const moved = await act(null, () => api("PATCH", `/api/issues/${card.dataset.issueId}`, { status: to }),
      `${card.dataset.identifier} moved to ${words(to)}`);
    // Refused (the toast says why): the card goes back where it was.
    if (moved === undefined) P.refreshSoon(50);
  }

  let dragged = null;
  const clearDrop = () => $$("[data-column]").forEach((c) => c.classList.remove("drop-ok", "drop-no"));
  document.addEventListener("dragstart", (ev) => {
    const card = ev.target.closest && ev.target.closest(".task-card");
    if (!card) return;
    dragged = card;
    ev.dataTransfer.setData("text/plain", card.dataset.issueId);
    ev.dataTransfer.effectAllowed = "move";
  });
  document.addEventListener("dragover", (ev) => {
    const col = dragged && ev.target.closest && ev.target.closest("[data-column]");
    if (!col) return;
    ev.preventDefault();
    const ok = (dragged.dataset.allowed || "").split(" ").includes(col.dataset.column);
    clearDrop();
    col.classList.add(ok ? "drop-ok" : "drop-no");
  });
  document.addEventListener("dragend", () => { dragged = null; clearDrop(); });
  document.addEventListener("drop", (ev) => {
    const col = dragged && ev.target.closest && ev.target.closest("[data-column]");
    if (!col) return;
    ev.preventDefault();
    const card = dragged;
    dragged = null;
    clearDrop();
    if (col.dataset.column !== card.dataset.status) moveCard(card, col.dataset.column);
  });
  document.addEventListener("keydown", (ev) => {
    const card = ev.target.matches && ev.target.matches(".task-card") ? ev.target : null;
    if (!card || (ev.key !== "ArrowLeft" && ev.key !== "ArrowRight")) return;
    ev.preventDefault();
    const order = columnOrder(card);
    const allowed = (card.dataset.allowed || "").split(" ");
    const here = order.indexOf(card.dataset.status);
    const step = ev.key === "ArrowRight" ? 1 : -1;
    for (let i = here + step; i >= 0 && i < order.length; i += step) {
      if (allowed.includes(order[i])) {
        moveCard(card, order[i]).then(() => {
          const again = $(`.task-card[data-issue-id="${card.dataset.issueId}"]`);
          if (again) again.focus();
        });
        return;
      }
    }
    toast(`${card.dataset.identifier} has no allowed status that way`, "error");
  });

  // ---- folded columns ------------------------------------------------------------

  // `{status: folded}` as the person left each; a status not in it keeps
  // the page's default. Kept in memory too, should storage be refused.
  const FOLD_KEY = "paperclip.board.folded";
  let folds = {};
  try { folds = JSON.parse(localStorage.getItem(FOLD_KEY) || "{}") || {}; } catch (_) { folds = {}; }
  function applyFolds() {
    const board = $("[data-board]");
    if (!board) return;
    for (const button of $$("[data-collapse]", board)) {
      const status = button.dataset.collapse;
      if (!(status in folds)) continue;
      $$(`[data-column="${status}"], [data-head-cell="${status}"]`, board).forEach((c) => c.classList.toggle("collapsed", !!folds[status]));
      button.setAttribute("aria-expanded", folds[status] ? "false" : "true");
    }
  }
  // The fold button, or anywhere on a folded strip's head.
  document.addEventListener("click", (ev) => {
    const head = ev.target.closest && ev.target.closest("[data-collapse], .collapsed .column-head");
    if (!head || ev.target.closest("a")) return;
    const button = head.matches("[data-collapse]") ? head : $("[data-collapse]", head);
    if (!button) return;
    folds[button.dataset.collapse] = button.getAttribute("aria-expanded") === "true";
    try { localStorage.setItem(FOLD_KEY, JSON.stringify(folds)); } catch (_) { /* this page only */ }
    applyFolds();
  });

  // A filter or lanes choice applies at once (a live re-render would
  // otherwise put the form back before the person pressed Filter).
  document.addEventListener("change", (ev) => {
    const sel = ev.target.closest && ev.target.closest("form[data-autosubmit] select");
    if (sel) sel.form.requestSubmit();
  });

  // ---- selection -----------------------------------------------------------------------

  // Selected task ids, kept across live re-renders of the page.
  const selected = new Set();
  let lastClicked = null;
  const boxes = () => $$("input[data-select]");
  const holderOf = (id) => $(`.task-card[data-issue-id="${id}"], tr[data-issue-id="${id}"]`);

  function showSelection() {
    const present = new Set(boxes().map((b) => b.dataset.select));
    for (const id of [...selected]) if (!present.has(id)) selected.delete(id);
    for (const b of boxes()) {
      b.checked = selected.has(b.dataset.select);
      const holder = b.closest(".task-card, tr");
      if (holder) holder.classList.toggle("selected", b.checked);
    }
    const all = $("input[data-select-all]");
    if (all) {
      all.checked = boxes().length > 0 && boxes().every((b) => b.checked);
      all.indeterminate = !all.checked && selected.size > 0;
    }
    const bar = $("[data-bulk-bar]");
    if (!bar) return;
    bar.hidden = selected.size === 0 && !bar.dataset.busy && $("[data-bulk-report]", bar).hidden;
    $("[data-bulk-count]", bar).textContent = `${selected.size} selected`;
  }

  document.addEventListener("click", (ev) => {
    const box = ev.target.closest && ev.target.closest("input[data-select]");
    if (!box) return;
    // By id: a live re-render since the last click replaced the boxes.
    const list = boxes();
    const from = list.findIndex((b) => b.dataset.select === lastClicked);
    if (ev.shiftKey && from >= 0) {
      const [a, b] = [from, list.indexOf(box)].sort((x, y) => x - y);
      for (const other of list.slice(a, b + 1)) {
        if (box.checked) selected.add(other.dataset.select); else selected.delete(other.dataset.select);
      }
    } else if (box.checked) selected.add(box.dataset.select);
    else selected.delete(box.dataset.select);
    lastClicked = box.dataset.select;
    showSelection();
  });
  document.addEventListener("change", (ev) => {
    const all = ev.target.closest && ev.target.closest("input[data-select-all]");
    if (!all) return;
    for (const b of boxes()) if (all.checked) selected.add(b.dataset.select); else selected.delete(b.dataset.select);
    showSelection();
  });

  // ---- bulk changes ------------------------------------------------------------------

  function bulkChange(bar) {
    const field = (name) => $(`[data-bulk-field=${name}]`, bar);
    const pick = (name) => { const sel = field(name); return sel.value ? { value: sel.value, text: sel.selectedOptions[0].textContent.trim() } : null; };
    const status = pick("status");
    const assignee = pick("assignee");
    const label = pick("label");
    const priority = pick("priority");
    if (!status && !assignee && !label && !priority) return null;
    const said = [];
    if (status) said.push(`moved to ${status.text}`);
    if (assignee) said.push(assignee.value === "none" ? "unassigned" : `assigned to ${assignee.text}`);
    if (label) said.push(`labelled ${label.text}`);
    if (priority) said.push(`set to ${priority.text.toLowerCase()} priority`);
    const body = (holder) => {
      const b = {};
      if (status) b.status = status.value;
      if (priority) b.priority = priority.value;
      if (assignee) {
        const v = assignee.value;
        Object.assign(b, v === "none" ? { assigneeAgentId: null, assigneeUserId: null }
          : v.startsWith("user:") ? { assigneeAgentId: null, assigneeUserId: v.slice(5) }
          : { assigneeAgentId: v, assigneeUserId: null });
      }
      if (label) {
        const ids = (holder && holder.dataset.labelIds || "").split(" ").filter(Boolean);
        if (!ids.includes(label.value)) ids.push(label.value);
        b.labelIds = ids;
      }
      return b;
    };
    const n = (k) => `${k} ${k === 1 ? "task" : "tasks"}`;
    const summary = (k) => (status
      ? `Moved ${n(k)} to ${status.text}${said.length > 1 ? `, ${said.slice(1).join(", ")}` : ""}`
      : `Updated ${n(k)}: ${said.join(", ")}`);
    return { body, summary, reset: () => ["status", "assignee", "label", "priority"].forEach((f) => { field(f).value = ""; }) };
  }

  // At most this many requests at once: a big selection neither floods
  // the server nor waits on one task at a time.
  const PARALLEL = 4;

  async function applyBulk(bar, button) {
    const change = bulkChange(bar);
    if (!change) { toast("Choose a status, assignee, label or priority to set", "error"); return; }
    const ids = [...selected];
    if (!ids.length) return;
    const progress = $("[data-bulk-progress]", bar);
    const report = $("[data-bulk-report]", bar);
    report.hidden = true;
    report.replaceChildren();
    bar.dataset.busy = "1";
    button.disabled = true;
    let done = 0;
    const failures = [];
    const queue = ids.map((id) => {
      const holder = holderOf(id);
      return { id, identifier: holder ? holder.dataset.identifier : id, body: change.body(holder) };
    });
    progress.textContent = `Changing ${ids.length}…`;
    const worker = async () => {
      for (let job = queue.shift(); job; job = queue.shift()) {
        try {
          await api("PATCH", `/api/issues/${job.id}`, job.body);
        } catch (e) {
          failures.push({ ...job, reason: e.message });
        }
        done += 1;
        progress.textContent = `${done} of ${ids.length}…`;
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, ids.length) }, worker));
    const moved = ids.length - failures.length;
    progress.textContent = "";
    button.disabled = false;
    delete bar.dataset.busy;
    // The ones that failed stay selected, to try something else with them.
    selected.clear();
    for (const f of failures) selected.add(f.id);
    if (moved > 0) toast(change.summary(moved));
    if (failures.length) {
      for (const f of failures) {
        const li = document.createElement("li");
        li.dataset.failed = f.identifier;
        li.textContent = `${f.identifier} not changed: ${f.reason}`;
        report.appendChild(li);
      }
      report.hidden = false;
      toast(`${failures.length === 1 ? failures[0].identifier : `${failures.length} tasks`} not changed: ${failures.length === 1 ? failures[0].reason : "see the list above the tasks"}`, "error");
    } else {
      change.reset();
    }
    showSelection();
    P.refreshSoon(50);
  }

  document.addEventListener("click", (ev) => {
    const bar = ev.target.closest && ev.target.closest("[data-bulk-bar]");
    if (!bar) return;
    const apply = ev.target.closest("[data-bulk-apply]");
    if (apply) { applyBulk(bar, apply); return; }
    if (ev.target.closest("[data-bulk-clear]")) {
      selected.clear();
      const report = $("[data-bulk-report]", bar);
      report.hidden = true;
      report.replaceChildren();
      showSelection();
    }
  });

  // ---- a running card's step -----------------------------------------------------------

  // The newest line each running log printed, kept across re-renders (the
  // page's next render reads it from the log too).
  const steps = new Map();
  function showSteps() {
    for (const el of $$(".card-run[data-step-kind=log]")) {
      const line = steps.get(el.dataset.runId);
      const step = $(".run-step", el);
      if (line && step) step.textContent = line;
    }
  }
  // Log lines are not among the events pages re-render on by kind; the
  // stream app.js opened carries them.
  function followLogs() {
    const source = window.paperclipEvents;
    if (!source || source.paperclipBoardSteps) return;
    source.paperclipBoardSteps = true;
    source.addEventListener("heartbeat.run.log", (ev) => {
      let data = null;
      try { data = JSON.parse(ev.data).payload; } catch (_) { return; }
      if (!data || !data.runId || (data.stream !== "stdout" && data.stream !== "stderr")) return;
      const line = String(data.chunk || "").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("{")).pop();
      if (!line) return;
      steps.set(data.runId, line.length > 140 ? `${line.slice(0, 140)}…` : line);
      showSteps();
    });
  }

  function ready() { applyFolds(); showSelection(); showSteps(); }
  document.addEventListener("paperclip:refreshed", ready);
  // Deferred, this runs before the first paint is likely: folds at once.
  ready();
  // app.js opens the event stream on DOMContentLoaded, before this listener.
  document.addEventListener("DOMContentLoaded", followLogs);
})();
