// Agent Chat: open a chat with an agent, send messages (each with its own
// request id, so a retried send is not sent twice), and make a message an
// ordinary task of the company's first project, linked back in the chat.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;

  const requestId = () =>
    (crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(16).slice(2)}`);

  async function open(companyId, agentKey) {
    await P.api("POST", `/api/companies/${companyId}/chats/${encodeURIComponent(agentKey)}`);
    location.href = `/${P.prefix}/chats/${encodeURIComponent(agentKey)}`;
  }

  P.forms["chat-open"] = async (form) => {
    await open(form.dataset.companyId, P.value(form, "agent"));
  };

  P.forms["chat-send"] = async (form) => {
    const box = form.querySelector("textarea[name=body]");
    const body = box.value.trim();
    if (!body) return;
    // The id is kept on the form until the send succeeds: a retry after a
    // lost answer reuses it, and the server answers with the same message.
    form.dataset.requestId = form.dataset.requestId || requestId();
    await P.api("POST", `/api/issues/${form.dataset.issueId}/comments`, {
      body,
      clientRequestId: form.dataset.requestId,
    });
    delete form.dataset.requestId;
    box.value = "";
    P.refreshSoon(50);
  };

  async function makeTask(button) {
    const chatId = P.$("#chat-composer").dataset.issueId;
    const projects = await P.api("GET", `/api/companies/${P.companyId}/projects`);
    const project = Array.isArray(projects) && projects.length ? projects[0].id : undefined;
    const title = button.dataset.title;
    const task = await P.api("POST", `/api/companies/${P.companyId}/issues`, {
      title,
      description: button.dataset.body,
      status: "todo",
      ...(project ? { projectId: project } : {}),
    });
    await P.api("POST", `/api/issues/${chatId}/comments`, {
      body: `Made this a task: ${task.identifier} · ${title}`,
      clientRequestId: requestId(),
    });
    P.toast(`Made ${task.identifier}`);
    P.refreshSoon(50);
  }

  document.addEventListener("click", async (ev) => {
    const start = ev.target.closest("[data-chat-open]");
    const make = ev.target.closest("[data-chat-make-task]");
    const button = start || make;
    if (!button) return;
    button.disabled = true;
    try {
      if (start) await open(start.dataset.companyId, start.dataset.chatOpen);
      else await makeTask(make);
    } catch (e) {
      P.toast(e.message, "error");
    } finally {
      button.disabled = false;
    }
  });
})();
