// The task page's editing: title and description in a dialog (with a
// preview and a check for someone else's change), the assignee (an agent or
// the board), labels (made on the spot), parent and blockers found by search,
// Ctrl+Enter to send a comment, and the reopen box of a closed task's
// comment. Built on app.js's `window.Paperclip`.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { $, api, act, toast, refreshSoon } = P;

  // ---- title and description -------------------------------------------------

  // What the dialog opened with: a save compares the server's current text
  // to it, so a change someone made meanwhile is never silently overwritten.
  let opened = null;

  document.addEventListener("click", async (ev) => {
    const edit = ev.target.closest("[data-edit-task]");
    if (!edit) return;
    const dialog = document.getElementById("edit-task");
    const form = $("form", dialog);
    try {
      const issue = await api("GET", `/api/issues/${edit.dataset.editTask}`);
      opened = { title: issue.title, description: issue.description || "" };
      form.elements.title.value = opened.title;
      form.elements.description.value = opened.description;
      showTab(form, "write");
      hideConflict(form);
      dialog.showModal();
      form.elements.title.focus();
    } catch (e) {
      toast(e.message, "error");
    }
  });

  function hideConflict(form) {
    const box = $(".conflict", form);
    box.hidden = true;
    box.replaceChildren();
    delete form.dataset.overwrite;
  }

  // Someone else changed a field this person also changed: show theirs and
  // let the person choose; saving again then overwrites on purpose.
  function showConflict(form, fields, current) {
    const box = $(".conflict", form);
    box.replaceChildren();
    const p = document.createElement("p");
    const strong = document.createElement("strong");
    strong.textContent = "Someone else changed this task while you were editing. ";
    p.append(strong, `Their ${fields.join(" and ")} is shown below; Save again to replace it with yours, or take theirs.`);
    box.append(p);
    for (const f of fields) {
      const pre = document.createElement("pre");
      pre.className = "theirs";
      pre.textContent = current[f] || "(empty)";
      box.append(pre);
    }
    const take = document.createElement("button");
    take.type = "button";
    take.textContent = "Take theirs";
    take.addEventListener("click", () => {
      for (const f of fields) form.elements[f].value = current[f] || "";
      opened = { title: current.title, description: current.description || "" };
      hideConflict(form);
    });
    box.append(take);
    box.hidden = false;
    form.dataset.overwrite = "1";
  }

  P.forms["edit-task"] = async (form) => {
    const id = form.dataset.issueId;
    const mine = { title: form.elements.title.value.trim(), description: form.elements.description.value };
    const changed = ["title", "description"].filter((f) => mine[f] !== opened[f]);
    if (!changed.length) {
      form.closest("dialog").close();
      return;
    }
    if (!form.dataset.overwrite) {
      const current = await api("GET", `/api/issues/${id}`);
      current.description = current.description || "";
      const clash = changed.filter((f) => current[f] !== opened[f] && current[f] !== mine[f]);
      if (clash.length) {
        showConflict(form, clash, current);
        return;
      }
    }
    const body = {};
    for (const f of changed) body[f] = f === "description" && mine[f] === "" ? null : mine[f];
    await api("PATCH", `/api/issues/${id}`, body);
    hideConflict(form);
    form.closest("dialog").close();
    toast("Task updated");
    refreshSoon(50);
  };

  function showTab(form, tab) {
    for (const b of form.querySelectorAll("[data-edit-tab]")) {
      const on = b.dataset.editTab === tab;
      b.classList.toggle("active", on);
      b.setAttribute("aria-selected", on ? "true" : "false");
    }
    $(".edit-write", form).hidden = tab !== "write";
    $(".edit-preview", form).hidden = tab !== "preview";
  }

  document.addEventListener("click", async (ev) => {
    const tab = ev.target.closest("[data-edit-tab]");
    if (!tab) return;
    const form = tab.closest("form");
    showTab(form, tab.dataset.editTab);
    if (tab.dataset.editTab !== "preview") return;
    const box = $(".edit-preview", form);
    const text = form.elements.description.value;
    if (!text.trim()) {
      box.innerHTML = '<p class="muted">Nothing to preview.</p>';
      return;
    }
    try {
      const res = await fetch("/ui/preview", { method: "POST", headers: { "content-type": "application/json", ...window.Paperclip.csrfHeader() }, body: JSON.stringify({ markdown: text }) });
      if (!res.ok) throw new Error(await res.text());
      // The server renders with the same escaping as the task page.
      box.innerHTML = await res.text();
    } catch (e) {
      box.textContent = `Preview failed: ${e.message}`;
    }
  });

  // ---- assignee -----------------------------------------------------------------

  document.addEventListener("change", async (ev) => {
    const sel = ev.target.closest("select[data-assign-issue]");
    if (!sel) return;
    const v = sel.value;
    const body = v === "" ? { assigneeAgentId: null, assigneeUserId: null }
      : v.startsWith("user:") ? { assigneeAgentId: null, assigneeUserId: v.slice(5) }
      : { assigneeAgentId: v, assigneeUserId: null };
    await act(sel, () => api("PATCH", `/api/issues/${sel.dataset.assignIssue}`, body), "Assignee changed");
  });

  // ---- labels ---------------------------------------------------------------------

  const currentLabels = (el) => JSON.parse(el.closest("[data-labels]").dataset.labels || "[]");

  document.addEventListener("change", async (ev) => {
    const box = ev.target.closest("input[data-label-toggle]");
    if (!box) return;
    const id = box.dataset.labelToggle;
    const ids = currentLabels(box).filter((x) => x !== id);
    if (box.checked) ids.push(id);
    const issueId = box.closest("[data-issue-id]").dataset.issueId;
    await act(box, () => api("PATCH", `/api/issues/${issueId}`, { labelIds: ids }), "Labels saved");
  });

  // Colours for new labels, picked in turn so neighbours differ.
  const PALETTE = ["#2563eb", "#16a34a", "#d97706", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#4b5563"];

  P.forms["new-label"] = async (form) => {
    const name = form.elements.name.value.trim();
    const ids = currentLabels(form);
    const color = PALETTE[Math.floor(Math.random() * PALETTE.length)];
    const label = await api("POST", `/api/companies/${P.companyId}/labels`, { name, color });
    await api("PATCH", `/api/issues/${form.dataset.issueId}`, { labelIds: [...ids, label.id] });
    form.reset();
    toast(`Label ${name} added`);
    refreshSoon(50);
  };

  // ---- parent and blockers ------------------------------------------------------------

  let pickTimer = null;
  document.addEventListener("input", (ev) => {
    const input = ev.target.closest("input[data-pick-task]");
    if (!input) return;
    clearTimeout(pickTimer);
    pickTimer = setTimeout(() => pickSearch(input), 150);
  });

  async function pickSearch(input) {
    const list = input.parentElement.querySelector(".pick-results");
    const q = input.value.trim();
    list.replaceChildren();
    if (!q) return;
    try {
      const rows = await api("GET", `/api/companies/${P.companyId}/issues?limit=10&q=${encodeURIComponent(q)}`);
      if (input.value.trim() !== q) return; // typed on meanwhile
      const self = input.dataset.issueId;
      for (const i of rows.filter((r) => r.id !== self)) {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "pick";
        b.setAttribute("role", "option");
        b.dataset.pickId = i.id;
        b.dataset.pickIdent = i.identifier;
        const ident = document.createElement("span");
        ident.className = "ident";
        ident.textContent = i.identifier;
        b.append(ident, ` ${i.title}`);
        list.append(b);
      }
      if (!list.children.length) {
        const none = document.createElement("p");
        none.className = "muted";
        none.textContent = "No matching task.";
        list.append(none);
      }
    } catch (e) {
      toast(e.message, "error");
    }
  }

  document.addEventListener("click", async (ev) => {
    const pick = ev.target.closest("button[data-pick-id]");
    if (!pick) return;
    const input = pick.closest(".picker-body").querySelector("input[data-pick-task]");
    const issueId = input.dataset.issueId;
    if (input.dataset.pickTask === "parent") {
      await act(pick, () => api("PATCH", `/api/issues/${issueId}`, { parentId: pick.dataset.pickId }),
        `Parent set to ${pick.dataset.pickIdent}`);
    } else {
      const ids = JSON.parse(pick.closest("[data-blockers]").dataset.blockers || "[]");
      if (!ids.includes(pick.dataset.pickId)) ids.push(pick.dataset.pickId);
      await act(pick, () => api("PATCH", `/api/issues/${issueId}`, { blockedByIssueIds: ids }),
        `${pick.dataset.pickIdent} now blocks this task`);
    }
  });

  // ---- comments: Ctrl+Enter sends ------------------------------------------------------

  document.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter" || !(ev.ctrlKey || ev.metaKey)) return;
    const area = ev.target.closest && ev.target.closest("form textarea");
    if (!area) return;
    ev.preventDefault();
    area.form.requestSubmit();
  });

  // ---- comments on a closed task: the reopen box ------------------------------------

  // The box is in the live region; a re-render must not undo the person's
  // choice. A sent comment starts over from the page's default.
  let reopenChoice = null;
  document.addEventListener("change", (ev) => {
    if (ev.target.matches && ev.target.matches("input[name=reopen][form=task-composer]")) reopenChoice = ev.target.checked;
  });
  document.addEventListener("paperclip:refreshed", () => {
    const box = document.querySelector("input[name=reopen][form=task-composer]");
    if (box && reopenChoice !== null) box.checked = reopenChoice;
  });
  document.addEventListener("submit", (ev) => {
    if (ev.target.id === "task-composer") setTimeout(() => { reopenChoice = null; }, 0);
  }, true);
})();
