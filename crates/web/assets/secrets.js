// Secrets (pages/secrets.rs): add, rotate and delete through upstream's
// secret routes. A value typed here is sent once and never read back.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { api, act, toast, value } = P;

  P.forms["new-secret"] = async (form) => {
    const name = value(form, "name");
    const secret = value(form, "value");
    if (!name) throw new Error("Name: a secret needs a name");
    if (!secret) throw new Error("Value: a secret needs a value");
    await api("POST", `/api/companies/${form.dataset.companyId}/secrets`, {
      name, value: secret, description: value(form, "description") || undefined,
    });
    form.reset();
    toast(`Secret ${name} added`);
    P.refreshSoon(50);
  };

  document.addEventListener("click", async (ev) => {
    const t = ev.target;
    const rotate = t.closest && t.closest("[data-secret-rotate]");
    if (rotate) {
      const next = prompt(`New value for ${rotate.dataset.name} (agents get it on their next run):`);
      if (!next) return;
      await act(rotate, () => api("POST", `/api/secrets/${rotate.dataset.secretRotate}/rotate`, { value: next }),
        `${rotate.dataset.name} rotated`);
      return;
    }
    const yes = t.closest && t.closest("[data-proposal-approve]");
    if (yes) {
      await act(yes, () => api("POST",
        `/api/companies/${yes.dataset.companyId}/secret-proposals/${yes.dataset.proposalApprove}/approve`, {}),
        "Approved: the agent can use it from its next run");
      return;
    }
    const no = t.closest && t.closest("[data-proposal-reject]");
    if (no) {
      const reason = prompt("Why not? The agent reads this.");
      if (!reason || !reason.trim()) return;
      await act(no, () => api("POST",
        `/api/companies/${no.dataset.companyId}/secret-proposals/${no.dataset.proposalReject}/reject`, { reason }),
        "Rejected");
      return;
    }
    const del = t.closest && t.closest("[data-secret-delete]");
    if (del) {
      if (del.dataset.confirm && !confirm(del.dataset.confirm)) return;
      await act(del, () => api("DELETE", `/api/secrets/${del.dataset.secretDelete}`), "Secret deleted");
    }
  });
})();
