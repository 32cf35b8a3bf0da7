// Paperclip board UI behaviour. Pages are rendered on the server; this file
// only (1) sends actions to the JSON API and reports their outcome, and
// (2) follows the company's event stream and re-renders the live region of
// the current page in place. Handlers are delegated from `document` so they
// keep working after a live re-render replaces the markup.
"use strict";

(() => {
  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
  const companyId = document.body.dataset.companyId || "";
  const prefix = document.body.dataset.prefix || "";

  // ---- feedback -----------------------------------------------------------

  function toast(message, kind = "info") {
    const box = $("#toasts");
    if (!box) return;
    const el = document.createElement("div");
    el.className = `toast ${kind}`;
    el.setAttribute("role", kind === "error" ? "alert" : "status");
    el.textContent = message;
    box.appendChild(el);
    setTimeout(() => el.remove(), kind === "error" ? 9000 : 4000);
  }

  // The server's error body is {error, code?, details?}; the person sees the
  // reason, plus field messages of a validation error.
  function reason(status, body) {
    if (!body || typeof body !== "object") return `Request failed (${status})`;
    let text = body.error || `Request failed (${status})`;
    const d = body.details;
    const issues = Array.isArray(d) ? d : d && Array.isArray(d.issues) ? d.issues : null;
    if (issues && issues.length) {
      text += ": " + issues.map((i) => `${(i.path || []).join(".") || "body"}: ${i.message}`).join("; ");
    }
    return text;
  }

  // A signed-in session's writes carry its CSRF token (authenticated instances).
  function csrfHeader() {
    const meta = document.querySelector('meta[name="paperclip-csrf"]');
    return meta ? { "x-paperclip-csrf": meta.content } : {};
  }

  async function api(method, url, body) {
    const init = { method, headers: { accept: "application/json" } };
    // A signed-in session's writes carry its CSRF token (authenticated instances).
    if (method !== "GET") Object.assign(init.headers, csrfHeader());
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(url, init);
    } catch (e) {
      throw new Error("The server cannot be reached");
    }
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (_) { data = text; }
    if (!res.ok) {
      // The body too, so a form can put each refused field beside itself.
      const err = new Error(reason(res.status, data));
      err.status = res.status;
      err.body = data;
      throw err;
    }
    return data;
  }

  // Runs an action with its button disabled; failures become toasts.
  async function act(button, fn, done) {
    if (button) button.disabled = true;
    try {
      const result = await fn();
      if (done) toast(done);
      refreshSoon(50);
      return result;
    } catch (e) {
      toast(e.message, "error");
      return undefined;
    } finally {
      if (button) button.disabled = false;
    }
  }

  // ---- forms ----------------------------------------------------------------

  const value = (form, name) => {
    const el = form.elements.namedItem(name);
    if (!el) return undefined;
    if (el.type === "checkbox") return el.checked;
    return el.value.trim();
  };
  const optional = (v) => (v === "" || v === undefined ? undefined : v);

  function parseJson(form, name) {
    const raw = value(form, name);
    if (!raw) return {};
    try {
      const v = JSON.parse(raw);
      if (v && typeof v === "object" && !Array.isArray(v)) return v;
    } catch (_) { /* reported below */ }
    throw new Error(`${name} must be a JSON object`);
  }

  const cents = (dollars) => Math.round(parseFloat(dollars || "0") * 100);

  const forms = {
    async "new-task"(form) {
      const issue = await api("POST", `/api/companies/${companyId}/issues`, {
        title: value(form, "title"),
        description: optional(value(form, "description")),
        assigneeAgentId: optional(value(form, "assigneeAgentId")),
        projectId: optional(value(form, "projectId")),
        goalId: optional(value(form, "goalId")),
        parentId: optional(value(form, "parentId")),
        priority: value(form, "priority"),
        status: value(form, "todo") ? "todo" : "backlog",
      });
      closeDialog(form);
      location.href = `/${prefix}/tasks/${issue.identifier}`;
    },
    async "new-company"(form) {
      const company = await api("POST", "/api/companies", {
        name: value(form, "name"),
        description: optional(value(form, "description")),
      });
      // The goal becomes the company's Goal, as upstream's onboarding does:
      // its first line the title, the rest the description.
      const [title, ...rest] = (value(form, "description") || "").split(/\r?\n/);
      if (title && title.trim()) {
        await api("POST", `/api/companies/${company.id}/goals`, {
          title: title.trim().slice(0, 200),
          description: optional(rest.join("\n").trim()),
          level: "company",
          status: "active",
        });
      }
      location.href = `/${company.issuePrefix}/dashboard`;
    },
    async hire(form) {
      const spec = {
        name: value(form, "name"),
        role: optional(value(form, "role")),
        title: optional(value(form, "title")),
        reportsTo: optional(value(form, "reportsTo")),
        adapterType: value(form, "adapterType"),
        adapterConfig: parseJson(form, "adapterConfig"),
      };
      const hire = await api("POST", `/api/companies/${companyId}/agent-hires`, spec);
      closeDialog(form);
      form.reset();
      toast(hire && hire.approval ? `${spec.name} waits for board approval` : `${spec.name} is hired`);
      refreshSoon(50);
    },
    async comment(form, submitter) {
      const body = value(form, "body");
      // On a closed task: whether the comment reopens it (the box's choice).
      const reopen = value(form, "reopen");
      const posted = await api("POST", `/api/issues/${form.dataset.issueId}/comments`, { body, reopen });
      form.reset();
      if (submitter && submitter.name === "interrupt") {
        await api("POST", `/api/issues/${form.dataset.issueId}/queued-comments/interrupt`, { targetRunId: submitter.value });
        toast("Comment posted; the run was interrupted and the next one starts with it");
      } else {
        toast(posted && posted.reopened ? "Comment posted; the task is reopened" : "Comment posted");
      }
      for (const n of (posted && posted.notWoken) || []) toast(n.message);
      refreshSoon(50);
    },
    async budget(form) {
      await api("PATCH", form.dataset.url, { budgetMonthlyCents: cents(value(form, "budgetDollars")) });
      toast("Budget saved");
      refreshSoon(50);
    },
    async key(form) {
      const key = await api("POST", form.dataset.url, { name: value(form, "name") });
      form.reset();
      shownToken = key.token;
      showToken();
      refreshSoon(50);
    },
    async config(form) {
      const template = form.elements.namedItem("promptTemplate");
      const unknown = template ? unknownVars(template) : [];
      if (unknown.length) throw new Error(`Unknown template variable: ${unknown.join(", ")}`);
      const adapterConfig = parseJson(form, "adapterConfig");
      if (template && template.value.trim()) adapterConfig.promptTemplate = template.value;
      let runtimeConfig = {};
      try { runtimeConfig = JSON.parse(form.dataset.runtimeConfig || "{}") || {}; } catch (_) { runtimeConfig = {}; }
      runtimeConfig.heartbeat = Object.assign({}, runtimeConfig.heartbeat, {
        enabled: value(form, "hb.enabled"),
        intervalSec: Number(value(form, "hb.intervalSec") || 0),
        wakeOnAssignment: value(form, "hb.wakeOnAssignment"),
        wakeOnOnDemand: value(form, "hb.wakeOnOnDemand"),
        wakeOnAutomation: value(form, "hb.wakeOnAutomation"),
        wakeWhenIdle: value(form, "hb.wakeWhenIdle"),
        maxConcurrentRuns: Number(value(form, "hb.maxConcurrentRuns") || 1),
      });
      // The form holds the whole config (unknown keys too), so it replaces
      // the stored one: a cleared field or template is really cleared.
      await api("PATCH", form.dataset.url, { adapterType: value(form, "adapterType"), adapterConfig, replaceAdapterConfig: true, runtimeConfig });
      toast("Configuration saved");
      refreshSoon(50);
    },
    // `project` (with its repository) is in workspaces.js.
    async goal(form) {
      await api("POST", form.dataset.url, { title: value(form, "title") });
      form.reset();
      toast("Goal added");
      refreshSoon(50);
    },
  };

  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest("form[data-api-form]");
    if (!form) return;
    ev.preventDefault();
    const handler = forms[form.dataset.apiForm];
    if (!handler) return;
    const submit = $("button[type=submit]", form);
    if (submit) submit.disabled = true;
    try {
      await handler(form, ev.submitter);
    } catch (e) {
      toast(e.message, "error");
    } finally {
      if (submit) submit.disabled = false;
    }
  });

  // An API key's token is shown once; it survives live re-renders of the
  // page until the person leaves it.
  let shownToken = null;
  function showToken() {
    const box = $("#new-key-token");
    if (!box || !shownToken) return;
    box.hidden = false;
    box.textContent = "";
    const p = document.createElement("p");
    p.textContent = "Copy this key now; it is not shown again:";
    const code = document.createElement("code");
    code.textContent = shownToken;
    box.append(p, code);
  }

  // ---- buttons, selects -------------------------------------------------------

  document.addEventListener("click", async (ev) => {
    const t = ev.target;
    const action = t.closest("[data-action]");
    if (action) {
      if (action.dataset.confirm && !confirm(action.dataset.confirm)) return;
      const body = action.dataset.body ? JSON.parse(action.dataset.body) : undefined;
      await act(action, () => api(action.dataset.action, action.dataset.url, body), action.dataset.done);
      return;
    }
    const decide = t.closest("[data-decide]");
    if (decide) {
      const form = decide.closest("form[data-approval]");
      const note = value(form, "decisionNote");
      const verb = decide.dataset.decide;
      await act(decide, () => api("POST", `/api/approvals/${form.dataset.approval}/${verb}`, { decisionNote: optional(note) }),
        { approve: "Approved", reject: "Rejected", "request-revision": "Revision requested" }[verb]);
      return;
    }
    const opener = t.closest("[data-open-dialog]");
    if (opener) {
      openDialog(opener.dataset.openDialog, opener.dataset.presetAssignee);
      return;
    }
    if (t.closest("[data-close-dialog]")) {
      closeDialog(t);
      return;
    }
    const mention = t.closest("[data-mention]");
    if (mention) {
      const area = $("textarea[name=body]", mention.closest("form"));
      insertAtCursor(area, `@${mention.dataset.mention} `);
      return;
    }
    const pill = t.closest("[data-insert-var]");
    if (pill) {
      const area = $("textarea[data-template]", pill.closest(".template-editor"));
      insertAtCursor(area, `{{${pill.dataset.insertVar}}}`);
      checkTemplate(area);
      return;
    }
    if (t.closest("[data-toggle-sidebar]")) {
      $("#sidebar").classList.toggle("open");
    }
  });

  document.addEventListener("change", async (ev) => {
    const t = ev.target;
    if (t.matches("[data-switch-company]")) {
      if (t.value === "__new") openDialog("new-company");
      else location.href = `/${t.value}/dashboard`;
      return;
    }
    if (t.matches("[data-patch-company]")) {
      const body = { [t.dataset.field]: t.checked };
      await act(t, () => api("PATCH", `/api/companies/${t.dataset.patchCompany}`, body), "Company settings saved");
      return;
    }
    if (t.matches("[data-patch-issue]")) {
      if (t.value === "" && t.dataset.field === "status") return;
      const body = { [t.dataset.field]: t.value === "" ? null : t.value };
      await act(t, () => api("PATCH", `/api/issues/${t.dataset.patchIssue}`, body), "Task updated");
    }
  });

  document.addEventListener("input", (ev) => {
    if (ev.target.matches("textarea[data-template]")) checkTemplate(ev.target);
  });

  function insertAtCursor(area, text) {
    if (!area) return;
    const start = area.selectionStart ?? area.value.length;
    const end = area.selectionEnd ?? area.value.length;
    area.value = area.value.slice(0, start) + text + area.value.slice(end);
    area.focus();
    area.selectionStart = area.selectionEnd = start + text.length;
  }

  // ---- prompt template ---------------------------------------------------------

  function unknownVars(area) {
    const known = new Set((area.dataset.catalog || "").split(/\s+/).filter(Boolean));
    const found = [...area.value.matchAll(/\{\{\s*([^}\s]+)\s*\}\}/g)].map((m) => m[1]);
    return [...new Set(found.filter((v) => !known.has(v)))];
  }

  function checkTemplate(area) {
    const box = $(".template-error", area.closest(".template-editor"));
    if (!box) return;
    const unknown = unknownVars(area);
    box.hidden = unknown.length === 0;
    box.textContent = unknown.length ? `Unknown variable: ${unknown.join(", ")} — use the pills below.` : "";
  }

  // ---- dialogs -------------------------------------------------------------------

  async function openDialog(id, presetAssignee) {
    const dialog = document.getElementById(id);
    if (!dialog) return;
    await fillSelects(dialog);
    if (presetAssignee) {
      const sel = $("select[name=assigneeAgentId]", dialog);
      if (sel) sel.value = presetAssignee;
    }
    if (!dialog.open) dialog.showModal();
    const first = $("input:not([type=hidden]), textarea", dialog);
    if (first) first.focus();
  }

  function closeDialog(el) {
    const dialog = el.closest("dialog");
    if (dialog && dialog.open) dialog.close();
    const switcher = $("[data-switch-company]");
    if (switcher && switcher.value === "__new") switcher.selectedIndex = 0;
  }

  // The New Task selects are filled from the API when the dialog opens, so
  // every page carries the same small dialog without loading lists itself.
  async function fillSelects(dialog) {
    const sources = {
      agents: [`/api/companies/${companyId}/agents`, (a) => a.status !== "terminated", (a) => a.name],
      projects: [`/api/companies/${companyId}/projects`, () => true, (p) => p.name],
      goals: [`/api/companies/${companyId}/goals`, () => true, (g) => g.title],
    };
    await Promise.all($$("select[data-fill]", dialog).map(async (sel) => {
      const [url, keep, label] = sources[sel.dataset.fill] || [];
      if (!url || !companyId) return;
      try {
        let rows = await api("GET", url);
        if (rows && !Array.isArray(rows)) rows = rows.issues || rows.items || [];
        const first = sel.options[0];
        sel.replaceChildren(first);
        for (const row of rows.filter(keep)) sel.add(new Option(label(row), row.id));
      } catch (e) {
        toast(e.message, "error");
      }
    }));
  }

  // A task picker searches as the person types (the full-text `q` of the
  // issue list, 20 at a time) instead of loading a company's tasks.
  let searchTimer = null;
  document.addEventListener("input", (ev) => {
    const input = ev.target.closest("input[data-search-tasks]");
    if (!input) return;
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => searchTasks(input), 150);
  });

  async function searchTasks(input) {
    const sel = $(`select[name=${input.dataset.searchTasks}]`, input.closest("form"));
    const q = input.value.trim();
    if (!sel || !companyId) return;
    const none = sel.options[0];
    if (!q) { sel.replaceChildren(none); return; }
    try {
      const rows = await api("GET", `/api/companies/${companyId}/issues?limit=20&q=${encodeURIComponent(q)}`);
      if (input.value.trim() !== q) return; // typed on meanwhile
      sel.replaceChildren(none);
      for (const i of rows) sel.add(new Option(`${i.identifier} ${i.title}`, i.id));
      if (rows.length) sel.selectedIndex = 1;
    } catch (e) {
      toast(e.message, "error");
    }
  }

  // The task board's drag, keyboard moves and bulk changes: board.js.

  // ---- live updates -----------------------------------------------------------------

  let refreshTimer = null;
  let refreshing = false;
  let pendingRefresh = false;

  function refreshSoon(delay = 250) {
    if (refreshTimer) return;
    refreshTimer = setTimeout(() => {
      refreshTimer = null;
      refresh();
    }, delay);
  }

  let pressedAt = 0;
  document.addEventListener("pointerdown", () => { pressedAt = Date.now(); }, true);
  const released = () => {
    pressedAt = 0;
    if (pendingRefresh) setTimeout(() => { if (!busy()) refreshSoon(100); }, 0);
  };
  ["pointerup", "pointercancel", "dragstart"].forEach((t) => document.addEventListener(t, released, true));

  // A person typing or choosing inside the live region must not lose it.
  function busy() {
    const live = $("#live-body");
    if (!live) return true;
    if ($$("dialog[open]", live).length) return true;
    // A form half filled in (an answer to an agent's question) is kept.
    if ($$("form[data-dirty]", live).length) return true;
    // Mid-click: a re-render between mousedown and mouseup would swallow the
    // click (it lands on no element), so a picker never opens. Bounded, in
    // case the mouseup went to another window.
    if (Date.now() - pressedAt < 1500) return true;
    const a = document.activeElement;
    const typing = "textarea, input:not([type]), input[type=text], input[type=search], input[type=number], input[type=email], input[type=url], input[type=password]";
    return !!(a && live.contains(a) && a.matches(typing));
  }

  // Details the person opened or closed keep that state across re-renders.
  const toggled = new Map();
  const detailsKey = (d) => {
    // A run, or a part that names itself (a run's changes), so the key
    // holds when newer ones are rendered above it.
    const run = d.closest("[data-run-id], [data-details-scope]");
    const cls = d.className || "details";
    const siblings = $$(`details.${cls.split(" ")[0] || "x"}`, run || $("#live-body"));
    return `${run ? run.dataset.runId || run.dataset.detailsScope : "page"}:${cls}:${siblings.indexOf(d)}`;
  };
  // Only a person's click counts: the browser also fires (trusted) toggle
  // events when markup arrives with `open`, which must not stick.
  document.addEventListener("click", (ev) => {
    const summary = ev.target.closest && ev.target.closest("summary");
    const d = summary && summary.parentElement;
    if (!d || d.tagName !== "DETAILS") return;
    // The key is taken now, while `d` is in the page: a re-render may land
    // before the browser's toggle does, and then `d` is a detached copy and
    // the new element (rendered closed) takes the person's choice here.
    const key = detailsKey(d);
    setTimeout(() => {
      toggled.set(key, d.open);
      restoreToggled();
    }, 0);
  });

  function restoreToggled() {
    const live = $("#live-body");
    if (!live) return;
    $$("details", live).forEach((d) => {
      const k = detailsKey(d);
      if (toggled.has(k) && d.open !== toggled.get(k)) d.open = toggled.get(k);
    });
  }

  async function refresh() {
    if (refreshing || busy()) {
      pendingRefresh = true;
      return;
    }
    refreshing = true;
    pendingRefresh = false;
    try {
      const res = await fetch(location.href, { headers: { accept: "text/html" } });
      if (!res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const fresh = $("#live-body", doc);
      const live = $("#live-body");
      if (!fresh || !live || busy()) {
        pendingRefresh = true;
        return;
      }
      const focusedCard = document.activeElement && document.activeElement.closest && document.activeElement.closest(".task-card");
      const focusId = focusedCard ? focusedCard.dataset.issueId : null;
      // An open details that names itself (id or data-details-key) stays open.
      const named = (d) => d.id || d.dataset.detailsKey;
      const open = new Set($$("details[open]", live).map(named).filter(Boolean));
      live.replaceChildren(...fresh.childNodes);
      $$("details", live).forEach((d) => { if (open.has(named(d))) d.open = true; });
      // The sidebar's badges: every section list, in order.
      const navs = $$("ul.nav", doc);
      $$("ul.nav").forEach((u, i) => { if (navs[i]) u.replaceWith(navs[i]); });
      restoreToggled();
      if (focusId) {
        const card = $(`.task-card[data-issue-id="${focusId}"]`);
        if (card) card.focus();
      }
      showToken();
      document.dispatchEvent(new CustomEvent("paperclip:refreshed"));
    } catch (_) {
      pendingRefresh = true;
    } finally {
      refreshing = false;
      if (pendingRefresh && !busy()) refreshSoon(500);
    }
  }

  document.addEventListener("focusout", () => { if (pendingRefresh) setTimeout(() => { if (!busy()) refreshSoon(100); }, 0); });
  document.addEventListener("close", () => { if (pendingRefresh) refreshSoon(100); }, true);

  // Named SSE events: EventSource has no wildcard, so the kinds pages react
  // to are listed. Log chunks arrive often; they refresh at most once a second.
  const KINDS = [
    "activity.appended", "issue.created", "issue.updated", "issue.comment.created",
    "agent.created", "agent.updated", "agent.status.changed",
    "heartbeat.run.queued", "heartbeat.run.started", "heartbeat.run.status", "heartbeat.run.finished", "budget.alert", "budget.hard_stop",
  ];

  function connect() {
    const state = $("#live-state");
    if (!companyId || !window.EventSource) {
      if (state) state.textContent = "live updates off";
      return;
    }
    let lastLog = 0;
    let dropped = false;
    // From the event the page was rendered at: what happened between the
    // render and this subscription is replayed (later reconnects send
    // Last-Event-ID themselves).
    const from = document.body.dataset.liveFrom;
    const source = new EventSource(`/api/companies/${companyId}/events${from ? `?lastEventId=${from}` : ""}`);
    source.onopen = () => {
      if (state) { state.textContent = "live"; state.className = "live-state on"; }
      // Back after a drop: the stream replays what it still holds, and a
      // re-render covers anything older.
      if (dropped) refreshSoon(50);
      dropped = false;
    };
    source.onerror = () => {
      dropped = true;
      if (state) { state.textContent = "reconnecting…"; state.className = "live-state off"; }
    };
    for (const kind of KINDS) {
      source.addEventListener(kind, (ev) => {
        refreshSoon(250);
        let data = null;
        try { data = JSON.parse(ev.data); } catch (_) { data = null; }
        for (const fn of eventHandlers) {
          try { fn(kind, data); } catch (e) { console.error(e); }
        }
      });
    }
    source.addEventListener("heartbeat.run.log", () => {
      const now = Date.now();
      if (now - lastLog > 1000) { lastLog = now; refreshSoon(400); }
    });
    window.paperclipEvents = source;
  }

  // The helpers feature scripts (loaded after this one) build on; a feature
  // adds its form handlers to `forms` and its reactions to `onEvent`.
  const eventHandlers = [];
  window.Paperclip = {
    $, $$, api, act, toast, csrfHeader, refreshSoon, forms, value, optional, parseJson,
    openDialog, closeDialog, companyId, prefix,
    onEvent: (fn) => eventHandlers.push(fn),
    reconnect: () => connect(),
  };

  document.addEventListener("DOMContentLoaded", () => {
    connect();
    $$("textarea[data-template]").forEach(checkTemplate);
  });
})();
