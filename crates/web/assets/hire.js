// The hire dialog (pages/hire.rs): per-adapter fields and an "Advanced
// (JSON)" view of the same adapterConfig, kept in step both ways; the
// environment test on "Check environment" and before every hire, whose
// failure blocks hiring unless "Hire anyway" is ticked; field errors from the
// server shown beside the field they name. Replaces Paperclip.forms.hire.
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
  const typeOf = (form) => $("[data-hire-type]", form).value;
  const fieldsOf = (form, type = typeOf(form)) => $$(`fieldset[data-adapter="${type}"] .hire-field`, form);
  const jsonArea = (form) => $("[data-hire-json]", form);
  const control = (field) => $("input, textarea, select", field);
  const labelOf = (field) => {
    const l = $("label", field);
    return l ? l.textContent.replace("*", "").trim() : field.dataset.key;
  };

  // ---- field <-> JSON value ------------------------------------------------------

  // {unset} | {value} | {error}
  function read(field) {
    const input = control(field);
    const raw = input.value;
    switch (field.dataset.kind) {
      case "bool":
        return input.checked ? { value: true } : { unset: true };
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
          out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
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
          ? Object.entries(v).map(([k, x]) => `${k}=${x && typeof x === "object" ? x.value ?? "" : x}`).join("\n")
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
    const report = $("#hire-env", form);
    report.hidden = true;
    report.replaceChildren();
    const anyway = $(".hire-anyway", form);
    anyway.hidden = true;
    $("input", anyway).checked = false;
  }

  function switchType(form) {
    const type = typeOf(form);
    $$("fieldset[data-adapter]", form).forEach((fs) => { fs.hidden = fs.dataset.adapter !== type; });
    // Keep what the new type also reads (cwd, env, command ...), drop the rest.
    const keys = new Set(fieldsOf(form).map((f) => f.dataset.key));
    const kept = {};
    for (const [k, v] of Object.entries(config(form))) if (keys.has(k)) kept[k] = v;
    configs.set(form, kept);
    fillFields(form);
    showJson(form);
    stale(form);
  }

  function reset(form) {
    form.reset();
    configs.set(form, {});
    switchType(form);
    $("[data-json-error]", form).hidden = true;
  }

  document.addEventListener("input", (ev) => {
    const form = ev.target.closest && ev.target.closest("form[data-api-form=hire]");
    if (!form) return;
    const field = ev.target.closest(".hire-field");
    if (field) {
      const r = read(field);
      fieldError(field, r.error ? `${labelOf(field)} ${r.error}` : "");
      if (r.error) return;
      const cfg = config(form);
      if (r.unset) delete cfg[field.dataset.key]; else cfg[field.dataset.key] = r.value;
      showJson(form);
      stale(form);
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
    }
  });

  document.addEventListener("change", (ev) => {
    const form = ev.target.closest && ev.target.closest("form[data-api-form=hire]");
    if (!form) return;
    if (ev.target.matches("[data-hire-type]")) switchType(form);
    else if (ev.target.closest(".hire-field") && ev.target.type === "checkbox") {
      ev.target.dispatchEvent(new Event("input", { bubbles: true }));
    }
  });

  // ---- environment test ------------------------------------------------------------

  // The API call without throwing, so a 422's field details can be shown.
  async function send(method, url, body) {
    let res;
    try {
      res = await fetch(url, {
        method,
        headers: { accept: "application/json", "content-type": "application/json" },
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

  function showReport(form, report) {
    const box = $("#hire-env", form);
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
      li.append(el("span", "mark", MARK[c.level] || "•"), el("span", "msg", message));
      if (c.hint) li.append(el("div", "hint", `How to fix: ${c.hint}`));
      if (c.detail) li.append(el("div", "detail", c.detail));
      list.append(li);
    }
    box.replaceChildren(el("p", "env-summary", SUMMARY[report.status] || report.status), list);
    const anyway = $(".hire-anyway", form);
    if (report.status === "fail") anyway.hidden = false;
    box.scrollIntoView({ block: "nearest" });
    anyway.scrollIntoView({ block: "nearest" });
  }

  async function checkEnvironment(form) {
    const type = typeOf(form);
    const r = await send("POST", `/api/companies/${companyId}/adapters/${type}/test-environment`,
      { adapterConfig: config(form) });
    if (!r.ok) {
      const report = { status: "fail", checks: [{ level: "error", code: "test_failed",
        message: `The environment check could not run: ${(r.data && r.data.error) || `status ${r.status}`}` }] };
      showReport(form, report);
      return report;
    }
    showReport(form, r.data);
    return r.data;
  }

  document.addEventListener("click", async (ev) => {
    const button = ev.target.closest && ev.target.closest("[data-hire-check]");
    if (!button) return;
    const form = button.closest("form");
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
    const bad = fieldsOf(form).filter((f) => read(f).error);
    bad.forEach((f) => fieldError(f, `${labelOf(f)} ${read(f).error}`));
    if (bad.length) { toast(`${labelOf(bad[0])} ${read(bad[0]).error}`, "error"); return true; }
    if (!$("[data-json-error]", form).hidden) {
      $("details.advanced", form).open = true;
      toast("Advanced (JSON) is not a valid JSON object", "error");
      return true;
    }
    return false;
  }

  // ---- hiring --------------------------------------------------------------------------

  P.forms.hire = async (form) => {
    if (pending(form)) return;
    const name = value(form, "name");
    if (!name) throw new Error("Name is required");
    const missing = fieldsOf(form).filter((f) => control(f).required && read(f).unset);
    missing.forEach((f) => fieldError(f, `${labelOf(f)} is required`));
    if (missing.length) throw new Error(`${labelOf(missing[0])} is required for ${typeOf(form)}`);
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
      const details = (r.data && Array.isArray(r.data.details)) ? r.data.details : [];
      const words = [];
      for (const d of details) {
        const path = d.path || [];
        const field = path[0] === "adapterConfig" ? fieldFor(form, path[1]) : null;
        const label = field ? labelOf(field) + path.slice(2).map((p) => `.${p}`).join("") : path.join(".");
        if (field) fieldError(field, `${label}: ${d.message}`);
        words.push(`${label || "body"}: ${d.message}`);
      }
      const why = (r.data && r.data.error) || `Request failed (${r.status})`;
      throw new Error(words.length ? `${why}: ${words.join("; ")}` : why);
    }
    // The new agent can be the next hire's manager without a reload.
    const agent = r.data && r.data.agent;
    const managers = $("select[name=reportsTo]", form);
    if (agent && managers) managers.add(new Option(agent.name, agent.id));
    closeDialog(form);
    reset(form);
    toast(r.data && r.data.approval ? `${name} waits for board approval` : `${name} is hired`);
    refreshSoon(50);
  };

  document.addEventListener("DOMContentLoaded", () => {
    $$("form[data-api-form=hire]").forEach((form) => switchType(form));
  });
})();
