// The hire dialog's "On a local model" section (pages/hire_local.rs): lists
// Ollama as the server detected it and the company's model servers with
// their models (GET /api/companies/{id}/model-servers, when the dialog
// opens); a model's button asks the server for the agent's config
// (.../model-servers/{id}/agent-config) and puts it in the editor that
// hire.js keeps (type select, then the JSON view), then runs the
// environment check. "Add server" posts a new server and lists again.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { $, $$, toast, companyId } = P;

  const section = () => $("#hire [data-local-models]");
  const formOf = (sec) => sec && sec.closest("form");

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  async function call(method, url, body) {
    const init = { method, headers: { accept: "application/json", ...P.csrfHeader() } };
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let res;
    try { res = await fetch(url, init); } catch (_) { throw new Error("The server cannot be reached"); }
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (_) { data = { error: text }; }
    if (!res.ok) {
      const first = data && Array.isArray(data.details) && data.details[0];
      const err = new Error((first && first.message) || (data && data.error) || `Status ${res.status}`);
      err.path = first && first.path;
      throw err;
    }
    return data;
  }

  const base = () => `/api/companies/${companyId}/model-servers`;

  const priceText = (p) => (!p || (!p.inputPerMillionUsd && !p.outputPerMillionUsd))
    ? "$0 · free"
    : `$${p.inputPerMillionUsd} in / $${p.outputPerMillionUsd} out per million tokens`;

  function render(sec, list) {
    const box = $("[data-local-servers]", sec);
    const status = $("[data-local-status]", sec);
    box.replaceChildren();
    const servers = list.servers || [];
    const up = servers.filter((s) => s.reachable);
    const count = up.reduce((n, s) => n + s.models.length, 0);
    status.textContent = count
      ? `${count} model${count === 1 ? "" : "s"} on ${up.length} server${up.length === 1 ? "" : "s"}: pick one to hire on it. Its tokens are counted; the price is the server's.`
      : `No local model found. Start Ollama on the server (it is looked for at ${list.ollamaUrl}) or add a server below.`;
    for (const s of servers) {
      const li = el("li", `local-server${s.reachable ? "" : " down"}`);
      li.dataset.server = s.id;
      const head = el("div", "local-server-head");
      head.append(el("strong", "", s.name), el("span", "local-url", s.baseUrl));
      if (s.detected) head.append(el("span", "muted", "detected on the server"));
      head.append(el("span", `local-price${s.price && (s.price.inputPerMillionUsd || s.price.outputPerMillionUsd) ? " paid" : ""}`, priceText(s.price)));
      li.append(head);
      if (!s.reachable) {
        li.append(el("div", "muted", s.detected ? `Not running here: ${s.error || "no answer"}` : `Not answering: ${s.error || "no answer"}`));
      } else if (!s.models.length) {
        li.append(el("div", "muted", "It serves no model yet (ollama pull <model>)."));
      } else {
        const models = el("div", "local-models");
        for (const m of s.models) {
          const b = el("button", "local-model");
          b.type = "button";
          b.dataset.localModel = m.id;
          b.dataset.localServer = s.id;
          b.setAttribute("aria-pressed", "false");
          b.append(el("strong", "", m.id));
          if (m.detail) b.append(el("span", "version", m.detail));
          models.append(b);
        }
        li.append(models);
      }
      box.append(li);
    }
  }

  let loading = null;
  function load(sec) {
    if (!sec) return null;
    loading = call("GET", base())
      .then((list) => render(sec, list))
      .catch((e) => { $("[data-local-status]", sec).textContent = `Could not list local models: ${e.message}`; })
      .finally(() => { loading = null; });
    return loading;
  }

  // A model's name as an agent's: "qwen3:8b" → "Qwen3".
  const agentName = (model) => {
    const stem = model.split("/").pop().split(":")[0];
    return stem ? stem[0].toUpperCase() + stem.slice(1) : model;
  };

  async function choose(sec, button) {
    const form = formOf(sec);
    const adapterType = $("[data-local-adapter]", sec).value;
    const q = new URLSearchParams({ adapterType, model: button.dataset.localModel });
    const hire = await call("GET", `${base()}/${encodeURIComponent(button.dataset.localServer)}/agent-config?${q}`);
    const select = $("[data-hire-type]", form);
    if (![...select.options].some((o) => o.value === hire.adapterType)) {
      const o = el("option", "", hire.adapterType);
      o.value = hire.adapterType;
      select.append(o);
    }
    select.value = hire.adapterType;
    select.dispatchEvent(new Event("change", { bubbles: true }));
    const json = $("[data-hire-json]", form);
    json.value = JSON.stringify(hire.adapterConfig, null, 2);
    json.dispatchEvent(new Event("input", { bubbles: true }));
    $$("[data-local-model]", sec).forEach((b) => b.setAttribute("aria-pressed", String(b === button)));
    const name = $("input[name=name]", form);
    if (!name.value.trim()) {
      name.value = agentName(button.dataset.localModel);
      name.dispatchEvent(new Event("input", { bubbles: true }));
    }
    const check = $("[data-hire-check]", form);
    if (check) check.click();
  }

  async function add(sec) {
    const field = (k) => $(`[data-local-field="${k}"]`, sec);
    const errorBox = $("[data-local-error]", sec);
    errorBox.hidden = true;
    const body = { name: field("name").value.trim(), baseUrl: field("baseUrl").value.trim(), kind: field("kind").value };
    const key = field("apiKey").value;
    if (key) body.apiKey = key;
    const input = Number(field("input").value || 0);
    const output = Number(field("output").value || 0);
    if (input || output) body.price = { inputPerMillionUsd: input, outputPerMillionUsd: output };
    try {
      const made = await call("POST", base(), body);
      for (const k of ["name", "baseUrl", "apiKey", "input", "output"]) field(k).value = "";
      $("details.local-add", sec).open = false;
      toast(`Added ${made.name}`);
      await load(sec);
    } catch (e) {
      errorBox.textContent = e.message;
      errorBox.hidden = false;
    }
  }

  document.addEventListener("click", async (ev) => {
    const t = ev.target;
    if (!t.closest) return;
    if (t.closest('[data-open-dialog="hire"]')) {
      if (!loading) load(section());
      return;
    }
    const sec = t.closest("[data-local-models]");
    if (!sec) return;
    const model = t.closest("[data-local-model]");
    const adding = t.closest("[data-local-add]");
    const button = model || adding;
    if (!button) return;
    button.disabled = true;
    try {
      if (model) await choose(sec, model); else await add(sec);
    } catch (e) {
      toast(e.message, "error");
    } finally {
      button.disabled = false;
    }
  });

  // Enter in the add form adds the server, never submits the hire.
  document.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter" || !ev.target.matches || !ev.target.matches("[data-local-field]")) return;
    ev.preventDefault();
    const sec = ev.target.closest("[data-local-models]");
    if (sec) $("[data-local-add]", sec).click();
  });
})();
