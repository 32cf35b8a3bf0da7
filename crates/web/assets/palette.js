// Command palette: Ctrl+K / Cmd+K (or the sidebar's "Find anything") opens
// one input that finds tasks (the issue list's full-text search: identifiers,
// titles, descriptions, comments), agents by name, pages and actions. Arrow
// keys choose, Enter opens, Esc closes. `ACM-12` + Enter opens that task at
// once, without waiting for the search.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P || !P.companyId) return;
  const { $, $$, api, companyId, prefix } = P;
  const IDENT = /^\s*([a-z]{1,10})-(\d{1,18})\s*$/i;

  let dialog, input, list, status;
  let items = [];
  let active = 0;
  let seq = 0;
  let agents = null;
  let opener = null;

  function build() {
    dialog = document.createElement("dialog");
    dialog.id = "palette";
    dialog.className = "palette";
    dialog.setAttribute("aria-label", "Find anything");
    dialog.innerHTML = `
      <label class="visually-hidden" for="palette-input">Find tasks, agents, pages and actions</label>
      <input id="palette-input" type="search" autocomplete="off" spellcheck="false"
        role="combobox" aria-expanded="true" aria-controls="palette-list" aria-autocomplete="list"
        placeholder="Find tasks, agents, pages… or type ${prefix || "ACM"}-12">
      <ul id="palette-list" role="listbox" aria-label="Results"></ul>
      <p class="palette-status muted" aria-live="polite"></p>
      <p class="palette-hint muted">↑ ↓ choose · Enter open · Esc close</p>`;
    document.body.appendChild(dialog);
    input = $("#palette-input", dialog);
    list = $("#palette-list", dialog);
    status = $(".palette-status", dialog);
    input.addEventListener("input", () => update());
    input.addEventListener("keydown", onKey);
    list.addEventListener("click", (ev) => {
      const li = ev.target.closest("[data-index]");
      if (li) choose(Number(li.dataset.index));
    });
    list.addEventListener("mousemove", (ev) => {
      const li = ev.target.closest("[data-index]");
      if (li && Number(li.dataset.index) !== active) mark(Number(li.dataset.index));
    });
    dialog.addEventListener("close", () => {
      if (opener && document.contains(opener)) opener.focus();
      opener = null;
    });
    // A click on the backdrop (outside the box) closes it.
    dialog.addEventListener("click", (ev) => { if (ev.target === dialog) dialog.close(); });
  }

  function open() {
    if (!dialog) build();
    if (dialog.open) { input.select(); return; }
    opener = document.activeElement;
    input.value = "";
    dialog.showModal();
    input.focus();
    update();
  }

  // ---- what can be found ----------------------------------------------------

  const pages = () => $$("ul.nav a").map((a) => ({
    group: "Pages", text: a.firstChild ? a.firstChild.textContent.trim() : a.textContent.trim(), href: a.getAttribute("href"),
  }));

  const actions = () => [
    { group: "Actions", text: "New task", run: () => P.openDialog("new-task") },
    { group: "Actions", text: "Hire an agent", href: `/${prefix}/agents` },
    { group: "Actions", text: "Review approvals", href: `/${prefix}/approvals` },
  ];

  async function loadAgents() {
    if (agents) return agents;
    try {
      const rows = await api("GET", `/api/companies/${companyId}/agents`);
      agents = (Array.isArray(rows) ? rows : []).map((a) => ({
        group: "Agents", text: a.name, note: a.status.replace(/_/g, " "), href: `/${prefix}/agents/${a.urlKey}`,
      }));
    } catch (e) {
      agents = [];
      P.toast(`Agents could not be loaded: ${e.message}`, "error");
    }
    return agents;
  }

  const matches = (text, q) => {
    const t = text.toLowerCase();
    return q.split(/\s+/).filter(Boolean).every((w) => t.includes(w));
  };

  async function update() {
    const q = input.value.trim();
    const mine = ++seq;
    const lq = q.toLowerCase();
    const local = [...pages(), ...actions()].filter((i) => !q || matches(i.text, lq));
    const ident = q.match(IDENT);
    const direct = ident ? [{
      group: "Tasks", text: `Open ${ident[1].toUpperCase()}-${ident[2]}`,
      href: `/${prefix}/tasks/${ident[1].toUpperCase()}-${ident[2]}`,
    }] : [];
    render([...direct, ...local], q ? "Searching tasks…" : "");
    if (!q) return;
    const [people, tasks] = await Promise.all([
      loadAgents().then((all) => all.filter((a) => matches(a.text, lq)).slice(0, 6)),
      api("GET", `/api/companies/${companyId}/issues?limit=8&q=${encodeURIComponent(q)}`).catch((e) => {
        if (mine === seq) status.textContent = `Task search failed: ${e.message}`;
        return null;
      }),
    ]);
    if (mine !== seq) return; // typed on meanwhile
    const found = (tasks || []).map((t) => ({
      group: "Tasks", ident: t.identifier, text: t.title, note: t.status.replace(/_/g, " "),
      href: `/${prefix}/tasks/${t.identifier}`,
    }));
    // The exact identifier found: its row replaces the bare "Open ACM-12".
    const exact = ident && found.some((t) => t.ident === `${ident[1].toUpperCase()}-${ident[2]}`);
    const all = [...(exact ? [] : direct), ...found, ...people, ...local];
    render(all, tasks === null ? status.textContent : all.length ? "" : `Nothing matches “${q}”.`);
  }

  function render(next, message) {
    items = next;
    active = 0;
    list.replaceChildren();
    let group = null;
    items.forEach((item, i) => {
      if (item.group !== group) {
        group = item.group;
        const h = document.createElement("li");
        h.className = "palette-group";
        h.setAttribute("role", "presentation");
        h.textContent = group;
        list.appendChild(h);
      }
      const li = document.createElement("li");
      li.id = `palette-item-${i}`;
      li.className = "palette-item";
      li.dataset.index = String(i);
      li.setAttribute("role", "option");
      if (item.ident) {
        const id = document.createElement("span");
        id.className = "ident";
        id.textContent = item.ident;
        li.append(id, " ");
      }
      li.append(item.text);
      if (item.note) {
        const note = document.createElement("span");
        note.className = "muted palette-note";
        note.textContent = item.note;
        li.append(" ", note);
      }
      list.appendChild(li);
    });
    status.textContent = message || "";
    mark(0);
  }

  function mark(i) {
    active = i;
    $$(".palette-item", list).forEach((li) => {
      const on = Number(li.dataset.index) === i;
      li.classList.toggle("active", on);
      li.setAttribute("aria-selected", on ? "true" : "false");
      if (on) li.scrollIntoView({ block: "nearest" });
    });
    if (items[i]) input.setAttribute("aria-activedescendant", `palette-item-${i}`);
    else input.removeAttribute("aria-activedescendant");
  }

  function choose(i) {
    const item = items[i];
    if (!item) return;
    opener = null;
    dialog.close();
    if (item.run) item.run();
    else location.href = item.href;
  }

  function onKey(ev) {
    // A search input would take the first Esc to clear itself.
    if (ev.key === "Escape") {
      ev.preventDefault();
      dialog.close();
      return;
    }
    if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      ev.preventDefault();
      if (!items.length) return;
      const step = ev.key === "ArrowDown" ? 1 : -1;
      mark((active + step + items.length) % items.length);
    } else if (ev.key === "Enter") {
      ev.preventDefault();
      // An identifier opens its task even before the search answers.
      const ident = input.value.match(IDENT);
      if (ident && (!items[active] || items[active].group !== "Tasks")) {
        opener = null;
        dialog.close();
        location.href = `/${prefix}/tasks/${ident[1].toUpperCase()}-${ident[2]}`;
        return;
      }
      choose(active);
    } else if (ev.key === "Home" || ev.key === "End") {
      if (!items.length || input.value) return;
      ev.preventDefault();
      mark(ev.key === "Home" ? 0 : items.length - 1);
    }
  }

  document.addEventListener("keydown", (ev) => {
    if ((ev.ctrlKey || ev.metaKey) && !ev.altKey && !ev.shiftKey && ev.key.toLowerCase() === "k") {
      ev.preventDefault();
      open();
    }
  });
  document.addEventListener("click", (ev) => {
    if (ev.target.closest && ev.target.closest("[data-open-palette]")) open();
  });
})();
