// Detail pages: Retry on a run's page opens the new run's page, and an
// approval's comment box posts to the approval's thread.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;

  document.addEventListener("click", async (ev) => {
    const button = ev.target.closest && ev.target.closest("[data-retry-run]");
    if (!button) return;
    const run = await P.act(button, () => P.api("POST", `/api/agents/${button.dataset.agentId}/wakeup`, {
      failedRunId: button.dataset.retryRun,
      reason: "retry_failed_run",
    }), "Retry queued");
    if (run && run.id) location.href = `/${P.prefix}/agents/${button.dataset.agentKey}/runs/${run.id}`;
  });

  P.forms["approval-comment"] = async (form) => {
    await P.api("POST", `/api/approvals/${form.dataset.approvalId}/comments`, { body: P.value(form, "body") });
    form.reset();
    P.toast("Comment posted");
    P.refreshSoon(50);
  };
})();
