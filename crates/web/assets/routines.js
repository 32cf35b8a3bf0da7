// Routines (pages/routines.rs, pages/routine.rs): the new-routine form (the
// routine, then its schedule trigger), adding a trigger, and a webhook's
// secret shown once (on create and on rotate) in a part of the page live
// updates leave alone.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { $, $$, api, act, toast, value, optional } = P;

  // The person's own timezone is the likelier default than UTC.
  function browserZones() {
    let zone = "";
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (_) { zone = ""; }
    for (const input of $$("input[data-browser-timezone]")) {
      if (zone && input.value === "UTC" && !input.dataset.touched) input.value = zone;
      const list = input.list;
      if (list && !list.children.length && Intl.supportedValuesOf) {
        for (const z of Intl.supportedValuesOf("timeZone")) {
          const o = document.createElement("option");
          o.value = z;
          list.appendChild(o);
        }
      }
    }
  }
  document.addEventListener("input", (ev) => {
    if (ev.target.matches && ev.target.matches("input[data-browser-timezone]")) ev.target.dataset.touched = "1";
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", browserZones);
  else browserZones();

  // A refused form says why beside itself as well as in a toast.
  function showError(form, message) {
    const box = $(".form-error", form);
    if (!box) return;
    box.textContent = message || "";
    box.hidden = !message;
  }

  function cronShape(cron) {
    if (cron.split(/\s+/).filter(Boolean).length !== 5) {
      throw new Error("Schedule: a cron expression has 5 fields (minute hour day month weekday), e.g. 0 9 * * 1-5");
    }
  }

  function scheduleBody(form) {
    const cron = value(form, "cronExpression");
    cronShape(cron);
    return { kind: "schedule", cronExpression: cron, timezone: value(form, "timezone") || "UTC" };
  }

  async function guarded(form, fn) {
    showError(form, "");
    try {
      await fn();
    } catch (e) {
      showError(form, e.message);
      throw e;
    }
  }

  P.forms["new-routine"] = (form) => guarded(form, async () => {
    const title = value(form, "title");
    if (!title) throw new Error("Title: a routine needs a title");
    if (!value(form, "assigneeAgentId")) throw new Error("Assigned to: choose the agent that does the work");
    const schedule = scheduleBody(form);
    // A routine made before its schedule was refused is reused on the next
    // submit rather than made twice.
    let id = form.dataset.pendingRoutine;
    if (!id) {
      const routine = await api("POST", `/api/companies/${form.dataset.companyId}/routines`, {
        title,
        description: optional(value(form, "description")),
        assigneeAgentId: value(form, "assigneeAgentId"),
        priority: value(form, "priority"),
        concurrencyPolicy: value(form, "concurrencyPolicy"),
        catchUpPolicy: value(form, "catchUpPolicy"),
        activityGatePolicy: value(form, "activityGatePolicy"),
      });
      id = routine.id;
      form.dataset.pendingRoutine = id;
    }
    try {
      await api("POST", `/api/routines/${id}/triggers`, schedule);
    } catch (e) {
      P.refreshSoon(50);
      throw new Error(`${title} was created, but its schedule was refused: ${e.message}. Fix the schedule and submit again.`);
    }
    delete form.dataset.pendingRoutine;
    form.reset();
    browserZones();
    toast(`Routine ${title} created`);
    P.refreshSoon(50);
  });

  function showSecret(material, what) {
    if (material) showSecrets([material], what);
  }

  // Each webhook's URL and secret, shown once; the first keeps the ids the
  // single case has always had.
  function showSecrets(materials, what) {
    const box = $("#webhook-secret");
    if (!box || !materials.length) return;
    box.textContent = "";
    const h = document.createElement("h2");
    h.textContent = what;
    const p = document.createElement("p");
    p.textContent = materials.length > 1
      ? "Copy the secrets now: they are not shown again."
      : "Copy the secret now: it is not shown again.";
    box.append(h, p);
    materials.forEach((material, i) => {
      const suffix = i ? `-${i + 1}` : "";
      const dl = document.createElement("dl");
      dl.className = "kv";
      for (const [label, text, id] of [["URL", material.webhookUrl, "webhook-url"], ["Secret", material.webhookSecret, "webhook-secret-value"]]) {
        const dt = document.createElement("dt");
        dt.textContent = label;
        const dd = document.createElement("dd");
        const code = document.createElement("code");
        code.id = id + suffix;
        code.textContent = text;
        dd.appendChild(code);
        dl.append(dt, dd);
      }
      box.appendChild(dl);
    });
    box.hidden = false;
  }

  P.forms["new-trigger"] = (form) => guarded(form, async () => {
    const kind = value(form, "kind");
    let body = { kind };
    if (kind === "schedule") body = scheduleBody(form);
    if (kind === "webhook") body.signingMode = value(form, "signingMode");
    const label = value(form, "label");
    if (label) body.label = label;
    const made = await api("POST", `/api/routines/${form.dataset.routineId}/triggers`, body);
    if (made && made.secretMaterial) showSecret(made.secretMaterial, "New webhook");
    form.elements.namedItem("label").value = "";
    toast("Trigger added");
    P.refreshSoon(50);
  });

  // Only the fields of the chosen kind show.
  document.addEventListener("change", (ev) => {
    const select = ev.target.closest && ev.target.closest("[data-trigger-kind]");
    if (!select) return;
    for (const part of $$("[data-for-kind]", select.form)) part.hidden = part.dataset.forKind !== select.value;
  });

  document.addEventListener("click", async (ev) => {
    const rotate = ev.target.closest && ev.target.closest("[data-rotate-trigger]");
    if (!rotate) return;
    if (rotate.dataset.confirm && !confirm(rotate.dataset.confirm)) return;
    const made = await act(rotate, () => api("POST", `/api/routine-triggers/${rotate.dataset.rotateTrigger}/rotate-secret`, {}), "Secret rotated");
    if (made && made.secretMaterial) showSecret(made.secretMaterial, "Rotated webhook secret");
  });

  // A restore can make deleted webhooks again, with new URLs and secrets.
  document.addEventListener("click", async (ev) => {
    const restore = ev.target.closest && ev.target.closest("[data-restore-revision]");
    if (!restore) return;
    if (restore.dataset.confirm && !confirm(restore.dataset.confirm)) return;
    const done = await act(restore, () => api("POST", restore.dataset.restoreRevision, {}), restore.dataset.done);
    if (done && done.secretMaterials && done.secretMaterials.length) {
      showSecrets(done.secretMaterials, done.secretMaterials.length > 1 ? "Webhooks made again" : "Webhook made again");
    }
  });
})();
