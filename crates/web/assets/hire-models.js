// The model field of the adapter config editor (pages/hire.rs `field`): its
// suggestions are what `GET /api/companies/{id}/adapters/{type}/models`
// answers for the field's adapter type, asked once per type when the field
// is first focused or its type chosen; any other id may still be typed. The
// model the CLI picks by itself on this server (`.../detect-model`) becomes
// the placeholder and is named under the field.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P || !P.companyId) return;
  const { $, companyId } = P;

  const asked = new Map(); // adapter type -> Promise<{ models, detected }>

  async function getJson(path) {
    try {
      const r = await fetch(path, { headers: { accept: "application/json" } });
      return r.ok ? await r.json() : null;
    } catch {
      return null;
    }
  }

  function lookup(type) {
    if (!asked.has(type)) {
      const base = `/api/companies/${encodeURIComponent(companyId)}/adapters/${encodeURIComponent(type)}`;
      asked.set(type, Promise.all([getJson(`${base}/models`), getJson(`${base}/detect-model`)])
        .then(([models, detected]) => ({ models: Array.isArray(models) ? models : [], detected })));
    }
    return asked.get(type);
  }

  async function fill(input) {
    if (!input || input.dataset.modelsAsked) return;
    const fieldset = input.closest("fieldset[data-adapter]");
    if (!fieldset) return;
    input.dataset.modelsAsked = "1";
    const { models, detected } = await lookup(fieldset.dataset.adapter);
    const list = input.list;
    if (list) {
      list.replaceChildren(...models.map((m) => {
        const o = document.createElement("option");
        o.value = m.id;
        if (m.label && m.label !== m.id) o.label = m.label;
        return o;
      }));
    }
    input.dataset.modelCount = String(models.length);
    if (detected && detected.model) {
      input.placeholder = detected.model;
      const help = document.getElementById(input.getAttribute("aria-describedby"));
      if (help && !$(".model-default", help)) {
        const note = document.createElement("span");
        note.className = "model-default";
        const where = String(detected.source || "").replace(/^env:/, "the variable ");
        note.textContent = ` On this server it is ${detected.model}${where ? ` (from ${where})` : ""}.`;
        help.append(note);
      }
    }
  }

  document.addEventListener("focusin", (ev) => {
    const input = ev.target.closest && ev.target.closest("[data-model-input]");
    if (input) fill(input);
  });

  // Choosing a type asks for its models before the field is reached.
  document.addEventListener("change", (ev) => {
    const select = ev.target.closest && ev.target.closest("[data-hire-type]");
    const form = select && select.closest("form");
    if (!form) return;
    fill($(`fieldset[data-adapter="${CSS.escape(select.value)}"] [data-model-input]`, form));
  });
})();
