// The adapter config editor (pages/hire.rs `editor`) of the hire dialog and
// of the agent page's configuration form: per-adapter fields and an
// "Advanced (JSON)" view of the same adapterConfig, kept in step both ways;
// the environment test on "Check environment" and before every save. A
// failed test blocks a hire unless "Hire anyway" is ticked, and only warns
// on the agent page (the agent exists already). Field errors from the server
// are shown beside the field they name. Replaces Paperclip.forms.hire and
// wraps Paperclip.forms.config.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { $, $$, toast, value, optional, closeDialog, refreshSoon, companyId } = P;

  const configs = new WeakMap(); // form -> the adapterConfig being edited
  const config = (form) => {
    if (!configs.has(form)) configs.set(form, {});
    return configs.get(form);
  };
  // Any form holding the editor: the hire dialog or an agent's config form.
  const editorOf = (el) => {
    const form = el && el.closest && el.closest("form");
    return form && $("[data-hire-type]", form) ? form : null;
  };
  const isHire = (form) => form.dataset.apiForm === "hire";
  const typeOf = (form) => $("[data-hire-type]", form).value;
  const fieldsOf = (form, type = typeOf(form)) => $$(`fieldset[data-adapter="${type}"] .hire-field`, form);
  const jsonArea = (form) => $("[data-hire-json]", form);
  const control = (field) => $("input, textarea, select", field);
  const labelOf = (field) => {
    const l = $("label", field);
    return l ? l.textContent.replace("*", "").trim() : field.dataset.key;
  };

  // ---- field <-> JSON value ------------------------------------------------------

  // How a pairs field shows one entry; an env binding object ({type, value}
  // or a secret reference) shows its value, or itself as JSON.
  const pairText = (x) => x && typeof x === "object"
    ? ("value" in x ? String(x.value ?? "") : JSON.stringify(x))
    : String(x);

  // {unset} | {value} | {error}. `prev` is the value the config held: a
  // field never turns what it cannot show into something else.
  function read(field, prev) {
    const input = control(field);
    const raw = input.value;
    switch (field.dataset.kind) {
      case "bool":
        if (input.checked) return { value: true };
        return prev === undefined ? { unset: true } : { value: false };
      case "number": {
        if (!raw.trim()) return { unset: true };
        const n = Number(raw);
        return Number.isFinite(n) ? { value: n } : { error: "must be a number" };
      }
      case "lines": {
        const lines = raw.split("\n").map((l) => l.trim()).filter(Boolean);
        return lines.length ? { value: lines } : { unset: true };
      }
      case "pairs": {
        const out = {};
        for (const line of raw.split("\n")) {
          if (!line.trim()) continue;
          const i = line.indexOf("=");
          if (i <= 0) return { error: `"${line.trim()}" is not NAME=value` };
          const name = line.slice(0, i).trim();
          const text = line.slice(i + 1).trim();
          // An unchanged binding object (an env secret reference) stays as it was.
          const old = prev && typeof prev === "object" ? prev[name] : undefined;
          out[name] = old && typeof old === "object" && pairText(old) === text ? old : text;
        }
        return Object.keys(out).length ? { value: out } : { unset: true };
      }
      case "json":
        if (!raw.trim()) return { unset: true };
        try { return { value: JSON.parse(raw) }; } catch (_) { return { error: "is not valid JSON" }; }
      default:
        return raw.trim() ? { value: field.querySelector("textarea") ? raw : raw.trim() } : { unset: true };
    }
  }

  function write(field, v) {
    const input = control(field);
    const none = v === undefined || v === null;
    switch (field.dataset.kind) {
      case "bool":
        input.checked = v === true;
        return;
      case "lines":
        input.value = none ? "" : Array.isArray(v) ? v.join("\n") : String(v);
        return;
      case "pairs":
        input.value = none ? "" : typeof v === "object"
          ? Object.entries(v).map(([k, x]) => `${k}=${pairText(x)}`).join("\n")
          : String(v);
        return;
      case "json":
        input.value = none ? "" : JSON.stringify(v, null, 2);
        return;
      default:
        input.value = none ? "" : String(v);
    }
  }

  function fieldError(field, message) {
    const box = $(".field-error", field);
    if (!box) return;
    box.hidden = !message;
    box.textContent = message || "";
    field.classList.toggle("invalid", !!message);
    const more = field.closest("details");
    if (message && more) more.open = true;
  }

  const showJson = (form) => { jsonArea(form).value = JSON.stringify(config(form), null, 2); };

  function fillFields(form) {
    const cfg = config(form);
    for (const field of fieldsOf(form)) {
      write(field, cfg[field.dataset.key]);
      fieldError(field, "");
      // A value set in the JSON view is not hidden behind "More options".
      const more = field.closest("details");
      if (more && cfg[field.dataset.key] !== undefined) more.open = true;
    }
  }

  // Anything edited makes the last environment report stale.
  function stale(form) {
    const report = $("[data-env-report]", form);
    report.hidden = true;
    report.replaceChildren();
    const anyway = $(".hire-anyway", form);
    if (!anyway) return;
    anyway.hidden = true;
    $("input", anyway).checked = false;
  }

  const showType = (form) => {
    const type = typeOf(form);
    $$("fieldset[data-adapter]", form).forEach((fs) => { fs.hidden = fs.dataset.adapter !== type; });
  };

  const saved = new WeakMap(); // agent form -> {type, config} as stored

  function switchType(form) {
    showType(form);
    const type = typeOf(form);
    const keys = new Set(fieldsOf(form).map((f) => f.dataset.key));
    // Keep what the new type also reads (cwd, env, command ...), drop the
    // rest; back on the agent's own type, its other settings come back.
    const stored = saved.get(form);
    const kept = stored && stored.type === type ? { ...stored.config } : {};
    for (const [k, v] of Object.entries(config(form))) if (keys.has(k)) kept[k] = v;
    configs.set(form, kept);
    fillFields(form);
    showJson(form);
    stale(form);
  }

  // An agent's form starts from the config it shows in the JSON view, every
  // key of it, including those no field shows.
  function startAgentForm(form) {
    let cfg = {};
    try { cfg = JSON.parse(jsonArea(form).value || "{}") || {}; } catch (_) { cfg = {}; }
    saved.set(form, { type: typeOf(form), config: { ...cfg } });
    // What the server rendered: a draft made on another version of the
    // config (rolled back, changed elsewhere) is not put back on this one.
    form.dataset.base = jsonArea(form).value + form.dataset.runtimeConfig + typeOf(form);
    configs.set(form, cfg);
    showType(form);
    fillFields(form);
    restoreDraft(form);
  }

  // ---- the agent page's form across live re-renders ------------------------------
  // A live update re-renders the page (a person typing is left alone, but a
  // ticked box, a chosen type or a shown report would be lost): what was
  // changed since the last save is put back on the new form.

  const drafts = new Map(); // form url -> {values, type, config, report}
  const draftKey = (form) => form.dataset.url;

  function saveDraft(form, extra) {
    if (isHire(form)) return;
    const values = {};
    for (const el of form.elements) {
      if (!el.name || el.name === "adapterConfig" || el.name === "adapterType") continue;
      values[el.name] = el.type === "checkbox" ? el.checked : el.value;
    }
    const prev = drafts.get(draftKey(form)) || {};
    drafts.set(draftKey(form), { ...prev, base: form.dataset.base, values, type: typeOf(form), config: { ...config(form) }, ...extra });
  }

  function restoreDraft(form) {
    const draft = drafts.get(draftKey(form));
    if (!draft) return;
    // Just saved: the first render after the save is the saved config.
    if (draft.base === "saved") draft.base = form.dataset.base;
    if (draft.base !== form.dataset.base) { drafts.delete(draftKey(form)); return; }
    if (draft.values) {
      for (const el of form.elements) {
        if (!(el.name in draft.values)) continue;
        if (el.type === "checkbox") el.checked = draft.values[el.name]; else el.value = draft.values[el.name];
      }
      $("[data-hire-type]", form).value = draft.type;
      configs.set(form, { ...draft.config });
      showType(form);
      fillFields(form);
      showJson(form);
    }
    if (draft.report) showReport(form, draft.report, false);
    if (draft.refusal) showRefusal(form, draft.refusal);
  }

  function reset(form) {
    form.reset();
    configs.set(form, {});
    switchType(form);
    $("[data-json-error]", form).hidden = true;
    $("[data-config-error]", form).hidden = true;
  }

  document.addEventListener("input", (ev) => {
    const form = editorOf(ev.target);
    if (!form) return;
    const field = ev.target.closest(".hire-field");
    if (field) {
      const cfg = config(form);
      const r = read(field, cfg[field.dataset.key]);
      fieldError(field, r.error ? `${labelOf(field)} ${r.error}` : "");
      if (r.error) return;
      if (r.unset) delete cfg[field.dataset.key]; else cfg[field.dataset.key] = r.value;
      showJson(form);
      stale(form);
      saveDraft(form, { report: null });
      return;
    }
    if (ev.target.matches("[data-hire-json]")) {
      const box = $("[data-json-error]", form);
      let parsed;
      try { parsed = JSON.parse(ev.target.value || "{}"); } catch (e) { parsed = e; }
      const ok = parsed && typeof parsed === "object" && !Array.isArray(parsed) && !(parsed instanceof Error);
      box.hidden = ok;
      box.textContent = ok ? "" : `Not a JSON object${parsed instanceof Error ? `: ${parsed.message}` : ""}; the fields keep the last valid config.`;
      if (!ok) return;
      configs.set(form, parsed);
      fillFields(form);
      stale(form);
      $("[data-config-error]", form).hidden = true;
      saveDraft(form, { report: null, refusal: null });
      return;
    }
    // The template and heartbeat settings of an agent's form.
    saveDraft(form);
  });

  document.addEventListener("change", (ev) => {
    const form = editorOf(ev.target);
    if (!form) return;
    if (ev.target.matches("[data-hire-type]")) {
      switchType(form);
      saveDraft(form, { report: null });
    } else if (ev.target.closest(".hire-field") && ev.target.type === "checkbox") {
      ev.target.dispatchEvent(new Event("input", { bubbles: true }));
    } else if (ev.target.type === "checkbox" || ev.target.tagName === "SELECT") {
      saveDraft(form);
    }
  });

  // ---- environment test ------------------------------------------------------------

  // The API call without throwing, so a 422's field details can be shown.
  async function send(method, url, body) {
    let res;
    try {
      res = await fetch(url, {
        method,
        headers: { accept: "application/json", "content-type": "application/json", ...P.csrfHeader() },
        body: JSON.stringify(body),
      });
    } catch (_) {
      throw new Error("The server cannot be reached");
    }
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (_) { data = { error: text }; }
    return { ok: res.ok, status: res.status, data };
  }

  const fieldFor = (form, key) => fieldsOf(form).find((f) => f.dataset.key === key);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  const SUMMARY = {
    pass: "Ready: every check passed.",
    warn: "Ready, with warnings: runs may still fail for the reasons below.",
    fail: "Not ready: the first run would fail. Fix what is marked ✗, then check again.",
  };
  const MARK = { info: "✓", warn: "!", error: "✗" };
  // Said to a screen reader and on hover: a mark alone is a colour and a glyph.
  const LEVEL = { info: "OK", warn: "Warning", error: "Error" };

  function showReport(form, report, scroll = true) {
    const box = $("[data-env-report]", form);
    box.hidden = false;
    box.className = `env-report env-${report.status}`;
    const list = el("ul");
    for (const c of report.checks || []) {
      let message = c.message || c.code;
      // Config problems read "key: why"; name the field as the form does.
      const m = c.code === "invalid_config" && /^([A-Za-z]+)(\.[^:]*)?: (.*)$/.exec(message);
      if (m) {
        const field = fieldFor(form, m[1]);
        if (field) {
          message = `${labelOf(field)}${m[2] || ""}: ${m[3]}`;
          fieldError(field, message);
        }
      }
      const li = el("li", `lvl-${c.level}`);
      const mark = el("span", "mark", MARK[c.level] || "•");
      mark.title = LEVEL[c.level] || c.level;
      mark.setAttribute("aria-label", `${mark.title}:`);
      li.append(mark, el("span", "msg", message));
      if (c.hint) li.append(el("div", "hint", `How to fix: ${c.hint}`));
      if (c.detail) li.append(el("div", "detail", c.detail));
      list.append(li);
    }
    box.replaceChildren(el("p", "env-summary", SUMMARY[report.status] || report.status), list);
    // Offered only while the last check failed, never after a pass.
    const anyway = $(".hire-anyway", form);
    if (anyway) {
      anyway.hidden = report.status !== "fail";
      if (anyway.hidden) $("input", anyway).checked = false;
    }
    if (!scroll) return;
    box.scrollIntoView({ block: "nearest" });
    if (anyway) anyway.scrollIntoView({ block: "nearest" });
  }

  async function checkEnvironment(form) {
    const type = typeOf(form);
    // An agent's id lets the server test with the secrets the page only
    // shows redacted.
    const r = await send("POST", `/api/companies/${companyId}/adapters/${type}/test-environment`,
      { adapterConfig: config(form), agentId: form.dataset.agentId,
        agentName: isHire(form) ? value(form, "name") || undefined : undefined });
    if (!r.ok) {
      const report = { status: "fail", checks: [{ level: "error", code: "test_failed",
        message: `The environment check could not run: ${(r.data && r.data.error) || `status ${r.status}`}` }] };
      showReport(form, report);
      return report;
    }
    showReport(form, r.data);
    saveDraft(form, { report: r.data });
    return r.data;
  }

  document.addEventListener("click", async (ev) => {
    const button = ev.target.closest && ev.target.closest("[data-hire-check]");
    if (!button) return;
    const form = editorOf(button);
    if (!form) return;
    button.disabled = true;
    try {
      if (!pending(form)) await checkEnvironment(form);
    } catch (e) {
      toast(e.message, "error");
    } finally {
      button.disabled = false;
    }
  });

  // A field or the JSON view that does not parse: say so instead of testing
  // or hiring with the last good value.
  function pending(form) {
    const error = (f) => read(f, config(form)[f.dataset.key]).error;
    const bad = fieldsOf(form).filter(error);
    bad.forEach((f) => fieldError(f, `${labelOf(f)} ${error(f)}`));
    if (bad.length) { toast(`${labelOf(bad[0])} ${error(bad[0])}`, "error"); return true; }
    if (!$("[data-json-error]", form).hidden) {
      $("details.advanced", form).open = true;
      toast("Advanced (JSON) is not a valid JSON object", "error");
      return true;
    }
    return false;
  }


  // ---- presets and what the server has installed ----------------------------------------

  const CLI_NAMES = { claude_local: "Claude Code", codex_local: "Codex", opencode_local: "OpenCode", gemini_local: "Gemini CLI", pi_local: "Pi" };
  const PRESET_NAMES = { example: "Example agent", claude_local: "Claude", codex_local: "Codex", opencode_local: "OpenCode" };
  // Upstream's defaults for a new agent of each CLI: nobody is there to
  // answer a permission prompt. Model and working directory stay empty: the
  // CLI's default model, the agent's own workspace (a task of a project with
  // a repository gets its own worktree whatever cwd says).
  const CLI_DEFAULTS = {
    claude_local: { dangerouslySkipPermissions: true },
    codex_local: { dangerouslyBypassApprovalsAndSandbox: true },
    opencode_local: {},
  };
  let detection = null; // the promise of the last GET .../adapters/detect

  async function fetchDetection() {
    const r = await fetch(`/api/companies/${companyId}/adapters/detect`, { headers: { accept: "application/json" } });
    if (!r.ok) throw new Error(`Could not look for installed CLIs (status ${r.status})`);
    return r.json();
  }

  function detect(form) {
    detection = fetchDetection();
    detection.then((d) => renderDetected(form, d), (e) => {
      const box = $("[data-detected-clis]", form);
      if (box) box.replaceChildren(el("span", "muted", e.message));
    });
    return detection;
  }

  function renderDetected(form, d) {
    const box = $("[data-detected-clis]", form);
    if (!box) return;
    const list = box.parentElement;
    $$("[data-cli]", list).forEach((row) => row.remove());
    box.hidden = true;
    for (const c of d.clis || []) {
      const name = CLI_NAMES[c.adapterType] || c.command;
      const row = el("li", "preset-row");
      row.dataset.cli = c.adapterType;
      if (!c.installed) {
        row.classList.add("not-installed");
        row.append(el("span", "", `${name}: not installed on the server (no `), el("code", "", c.command),
          el("span", "", " on its PATH)"));
        list.append(row);
        continue;
      }
      const button = el("button", "preset");
      button.type = "button";
      button.dataset.preset = c.adapterType;
      button.append(el("strong", "", name), el("span", "version", c.version || "no version"));
      button.title = c.path || "";
      const auth = c.auth || {};
      const note = el("span", `preset-note ${auth.ready ? "auth-ok" : "auth-missing"}`,
        c.error ? `Found at ${c.path}, but it does not start: ${c.error}` : `${auth.ready ? "✓" : "!"} ${auth.message || ""}`);
      if (auth.hint) note.title = auth.hint;
      row.append(button, note);
      list.append(row);
    }
  }

  async function applyPreset(form, preset) {
    let type;
    let cfg;
    if (preset === "example") {
      // Its real path on the server, never a guess.
      const d = await (detection || detect(form));
      const ex = d.exampleAgent;
      type = ex.adapterType;
      cfg = { command: ex.command, args: ex.args };
    } else {
      type = preset;
      cfg = { ...(CLI_DEFAULTS[preset] || {}) };
    }
    $("[data-hire-type]", form).value = type;
    showType(form);
    configs.set(form, cfg);
    fillFields(form);
    showJson(form);
    stale(form);
    const name = $("input[name=name]", form);
    if (!name.value.trim()) name.value = PRESET_NAMES[preset] || "";
    nameNote(form);
    await checkEnvironment(form);
  }

  document.addEventListener("click", async (ev) => {
    const opener = ev.target.closest && ev.target.closest('[data-open-dialog="hire"]');
    if (opener) {
      const form = $("#hire form");
      if (form && !detection) detect(form);
      return;
    }
    const button = ev.target.closest && ev.target.closest("[data-preset]");
    const form = button && editorOf(button);
    if (!form) return;
    button.disabled = true;
    try {
      await applyPreset(form, button.dataset.preset);
    } catch (e) {
      toast(e.message, "error");
    } finally {
      button.disabled = false;
    }
  });

  // Names are unique among live agents, compared as upstream's url keys:
  // say before hiring which name a taken one will get.
  const urlKey = (n) => n.trim().toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "");

  function nameNote(form) {
    const note = $("[data-name-note]", form);
    if (!note) return;
    const name = value(form, "name");
    const taken = new Map($$("select[name=reportsTo] option", form).filter((o) => o.value)
      .map((o) => [urlKey(o.textContent), o.textContent]));
    const key = urlKey(name);
    if (!key || !taken.has(key)) { note.hidden = true; note.textContent = ""; return; }
    let n = 2;
    while (taken.has(urlKey(`${name} ${n}`))) n += 1;
    note.hidden = false;
    note.textContent = `${taken.get(key)} exists already: this agent will be hired as "${name} ${n}".`;
  }

  document.addEventListener("input", (ev) => {
    if (ev.target.name !== "name") return;
    const form = editorOf(ev.target);
    if (form && isHire(form)) nameNote(form);
  });

  // ---- hiring --------------------------------------------------------------------------

  function requireFields(form) {
    const missing = fieldsOf(form).filter((f) => control(f).required && read(f).unset);
    missing.forEach((f) => fieldError(f, `${labelOf(f)} is required`));
    if (missing.length) throw new Error(`${labelOf(missing[0])} is required for ${typeOf(form)}`);
  }

  P.forms.hire = async (form) => {
    if (pending(form)) return;
    const name = value(form, "name");
    if (!name) throw new Error("Name is required");
    requireFields(form);
    const dollars = value(form, "budgetDollars");
    const budget = dollars === "" ? undefined : Number(dollars);
    if (budget !== undefined && !(budget >= 0)) throw new Error("Monthly budget must be 0 or more dollars");

    const report = await checkEnvironment(form);
    if (report.status === "fail" && !value(form, "hireAnyway")) {
      throw new Error("The environment check failed: fix what is listed, or tick \"Hire anyway\"");
    }
    const spec = {
      name,
      role: optional(value(form, "role")),
      title: optional(value(form, "title")),
      reportsTo: optional(value(form, "reportsTo")),
      adapterType: typeOf(form),
      adapterConfig: config(form),
      budgetMonthlyCents: budget === undefined ? undefined : Math.round(budget * 100),
    };
    const r = await send("POST", `/api/companies/${companyId}/agent-hires`, spec);
    if (!r.ok) {
      const words = showRefusal(form, r.data);
      const why = (r.data && r.data.error) || `Request failed (${r.status})`;
      throw new Error(words.length ? `${why}: ${words.join("; ")}` : why);
    }
    // The new agent can be the next hire's manager without a reload.
    const agent = r.data && r.data.agent;
    const managers = $("select[name=reportsTo]", form);
    if (agent && managers) managers.add(new Option(agent.name, agent.id));
    closeDialog(form);
    reset(form);
    nameNote(form);
    // The server gives a taken name the next free number, as upstream does.
    const hired = (agent && agent.name) || name;
    const renamed = hired !== name ? ` (${name} was taken)` : "";
    toast(r.data && r.data.approval ? `${hired} waits for board approval${renamed}` : `${hired} is hired${renamed}`);
    refreshSoon(50);
  };

  // The server's refusal of a config, beside what it names: a field, or
  // below the JSON view for a key no field shows (e.g. one the adapter does
  // not know, kept from an older config), saying how to fix it.
  function showRefusal(form, body) {
    const details = (body && Array.isArray(body.details)) ? body.details : [];
    const box = $("[data-config-error]", form);
    const words = [], loose = [];
    for (const d of details) {
      const path = d.path || [];
      const field = path[0] === "adapterConfig" ? fieldFor(form, path[1]) : null;
      const label = field ? labelOf(field) + path.slice(2).map((p) => `.${p}`).join("") : path.join(".");
      if (field) fieldError(field, `${label}: ${d.message}`);
      else if (path[0] === "adapterConfig" && path.length > 1) loose.push(`${path.slice(1).join(".")}: ${d.message}`);
      words.push(`${label || "body"}: ${d.message}`);
    }
    box.replaceChildren(...loose.map((l) => el("p", null, l)));
    if (loose.length) box.append(el("p", null, "Remove or fix it in the JSON above, then save again."));
    box.hidden = !loose.length;
    if (loose.length) $("details.advanced", form).open = true;
    return words;
  }

  // ---- saving an agent's configuration ------------------------------------------------

  // app.js's handler sends the form (the JSON view is the config, the
  // template and heartbeat fields beside it); the check runs first, and a
  // failure is shown and said but does not stop the save.
  const saveConfig = P.forms.config;
  P.forms.config = async (form, submitter) => {
    if (!$("[data-hire-type]", form)) return saveConfig(form, submitter);
    if (pending(form)) return;
    requireFields(form);
    let report = null;
    try { report = await checkEnvironment(form); } catch (_) { report = null; }
    $("[data-config-error]", form).hidden = true;
    try {
      await saveConfig(form, submitter);
    } catch (e) {
      // Kept across live re-renders until the config is edited.
      if (e.body) { showRefusal(form, e.body); saveDraft(form, { refusal: e.body }); }
      throw e;
    }
    // The saved form is what the page re-renders; only the report is kept.
    drafts.set(draftKey(form), { report, base: "saved" });
    if (report && report.status === "fail") {
      toast("Saved, but the environment check failed: runs will fail until what is marked ✗ is fixed", "error");
    }
  };

  function start() {
    $$("form").filter((f) => $("[data-hire-type]", f) && !configs.has(f)).forEach((form) => {
      if (isHire(form)) switchType(form); else startAgentForm(form);
    });
  }
  document.addEventListener("DOMContentLoaded", start);
  document.addEventListener("paperclip:refreshed", start);
})();
