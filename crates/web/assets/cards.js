// Interaction cards (pages/cards.rs): a person answers what an agent asked
// in a task's thread, through upstream's interaction routes.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { $$, api, act } = P;

  // Each question's answer: the options ticked, and typed text when the
  // question takes it. A required question left blank is caught here first.
  function answers(form) {
    const out = [];
    for (const set of $$("fieldset[data-question]", form)) {
      const questionId = set.dataset.question;
      const optionIds = $$("input[type=radio]:checked, input[type=checkbox]:checked", set).map((i) => i.value);
      const text = set.querySelector("input[type=text]");
      const otherText = text && text.value.trim() ? text.value.trim() : undefined;
      if (!optionIds.length && !otherText) {
        if (set.hasAttribute("data-required")) throw new Error(`Answer "${set.querySelector("legend").textContent.replace(/ \*$/, "")}"`);
        continue;
      }
      // Typed text goes with the question's free-text option, if it has one.
      const free = set.querySelector("input[data-free-text]");
      if (otherText && free && !optionIds.includes(free.value)) {
        if (free.type === "radio") optionIds.length = 0;
        optionIds.push(free.value);
      }
      out.push({ questionId, optionIds, otherText });
    }
    return out;
  }

  function verdicts(form) {
    const out = [];
    for (const set of $$("fieldset[data-item]", form)) {
      const chosen = set.querySelector("input[type=radio]:checked");
      if (!chosen) continue;
      const reason = set.querySelector("input[type=text]").value.trim();
      out.push({ id: set.dataset.item, verdict: chosen.value, reason: reason || undefined });
    }
    if (!out.length) throw new Error("Give a verdict on at least one item");
    return out;
  }

  const bodies = {
    respond: (form) => ({ answers: answers(form) }),
    reject: (form) => ({ reason: form.querySelector("textarea").value.trim() || undefined }),
    checkbox: (form) => ({ selectedOptionIds: $$("input[name=option]:checked", form).map((i) => i.value) }),
    suggest: (form) => {
      const keys = $$("input[name=task]:checked", form).map((i) => i.value);
      if (!keys.length) throw new Error("Select at least one task, or reject the suggestion");
      return { selectedClientKeys: keys };
    },
    verdicts: (form) => ({ verdicts: verdicts(form) }),
  };
  const done = { respond: "Answer sent", reject: "Sent back", checkbox: "Accepted", suggest: "Tasks created", verdicts: "Verdicts sent" };

  // Choices made on a card survive live updates until sent.
  for (const kind of ["input", "change"]) {
    document.addEventListener(kind, (ev) => {
      const form = ev.target.closest && ev.target.closest("form[data-interaction-form]");
      if (form) form.dataset.dirty = "1";
    });
  }

  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest && ev.target.closest("form[data-interaction-form]");
    if (!form) return;
    ev.preventDefault();
    const kind = form.dataset.interactionForm;
    let body;
    try {
      body = bodies[kind](form);
    } catch (e) {
      P.toast(e.message, "error");
      return;
    }
    delete form.dataset.dirty;
    const button = form.querySelector("button[type=submit]");
    await act(button, () => api("POST", form.dataset.url, body), done[kind]);
  });
})();
