// Account (pages/account.rs): board API keys (shown once) and the password,
// through upstream's routes.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { $, api, act, toast, value } = P;

  P.forms["new-board-key"] = async (form) => {
    const days = value(form, "expires");
    const body = { name: value(form, "name") || "paperclipai cli" };
    if (value(form, "scope") === "company") body.requestedCompanyId = form.dataset.companyId;
    body.expiresAt = days === "never" ? null : new Date(Date.now() + Number(days) * 86400000).toISOString();
    const key = await api("POST", "/api/board-api-keys", body);
    $("#board-key-value").textContent = key.token;
    $("#board-key-token").hidden = false;
    toast(`Key ${key.name} created`);
    P.refreshSoon(50);
  };

  P.forms["change-password"] = async (form) => {
    await api("POST", "/api/auth/change-password", {
      currentPassword: value(form, "currentPassword"),
      newPassword: value(form, "newPassword"),
    });
    form.reset();
    toast("Password changed; your other sessions are signed out");
  };

  document.addEventListener("click", async (ev) => {
    const revoke = ev.target.closest && ev.target.closest("[data-board-key-revoke]");
    if (!revoke) return;
    if (revoke.dataset.confirm && !confirm(revoke.dataset.confirm)) return;
    await act(revoke, () => api("DELETE", `/api/board-api-keys/${revoke.dataset.boardKeyRevoke}`), "Key revoked");
  });
})();
