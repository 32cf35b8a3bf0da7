// The prompt editor's preview: the template as typed, rendered by the server
// for a sample wake (POST /api/agents/{id}/prompt-preview), with credentials
// masked; a template that uses a credential gets a warning beside it.
(() => {
  const { $, $$, api } = window.Paperclip;
  const timers = new WeakMap();

  async function preview(editor) {
    const area = $("textarea[data-template]", editor);
    const out = $("[data-prompt-preview]", editor);
    const warn = $("[data-sensitive-warning]", editor);
    if (!area || !out) return;
    const asked = area.value;
    try {
      const res = await api("POST", editor.dataset.previewUrl, { promptTemplate: asked });
      if (area.value !== asked) return; // a newer preview is on its way
      out.textContent = res.prompt;
      out.classList.remove("error-text");
      out.dataset.source = res.source;
      if (warn) {
        warn.hidden = res.sensitive.length === 0;
        warn.textContent = res.sensitive.length
          ? `This template puts ${res.sensitive.join(", ")} into the prompt: the agent's CLI and model provider see it. It is masked here and redacted from logs; PAPERCLIP_API_KEY in the environment is safer.`
          : "";
      }
    } catch (e) {
      if (area.value !== asked) return;
      out.textContent = `No preview: ${e.message}`;
      out.classList.add("error-text");
    }
  }

  function soon(editor, ms) {
    clearTimeout(timers.get(editor));
    timers.set(editor, setTimeout(() => preview(editor), ms));
  }

  const all = () => $$(".template-editor[data-preview-url]").forEach((e) => soon(e, 0));
  document.addEventListener("input", (ev) => {
    const editor = ev.target.closest && ev.target.closest(".template-editor[data-preview-url]");
    if (editor && ev.target.matches("textarea[data-template]")) soon(editor, 350);
  });
  // A pill inserts its variable without an input event.
  document.addEventListener("click", (ev) => {
    const pill = ev.target.closest && ev.target.closest("[data-insert-var]");
    const editor = pill && pill.closest(".template-editor[data-preview-url]");
    if (editor) soon(editor, 50);
  });
  document.addEventListener("DOMContentLoaded", all);
  document.addEventListener("paperclip:refreshed", all);
})();
