// The agent page's instructions editor (pages/agent_instructions.rs): saves
// the entry file of the agent's managed bundle through upstream's
// instructions-bundle route; the agent's next run is handed it.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { api, toast } = P;

  P.forms["agent-instructions"] = async (form) => {
    const file = await api("PUT", form.dataset.url, {
      path: form.dataset.path,
      content: form.elements.content.value,
    });
    toast(`${file.path} saved: the next run uses it`);
    P.refreshSoon(50);
  };
})();
