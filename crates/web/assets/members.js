// Members (pages/members.rs): invite links, roles, suspending and removing
// members, through upstream's member and invite routes.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { $, api, act, toast, value, companyId } = P;

  P.forms["invite"] = async (form) => {
    const invite = await api("POST", `/api/companies/${form.dataset.companyId}/invites`, {
      humanRole: value(form, "humanRole"),
    });
    $("#invite-url").textContent = invite.inviteUrl;
    $("#invite-link").hidden = false;
    toast(`Invite link for a new ${invite.humanRole} created`);
    P.refreshSoon(50);
  };

  document.addEventListener("change", async (ev) => {
    const select = ev.target.closest && ev.target.closest("[data-member-role]");
    if (!select) return;
    await act(select, () => api("PATCH", `/api/companies/${companyId}/members/${select.dataset.memberRole}`,
      { membershipRole: select.value }), "Role changed");
  });

  document.addEventListener("click", async (ev) => {
    const t = ev.target;
    const status = t.closest && t.closest("[data-member-status]");
    if (status) {
      await act(status, () => api("PATCH", `/api/companies/${companyId}/members/${status.dataset.member}`,
        { status: status.dataset.memberStatus }), "Member updated");
      return;
    }
    const remove = t.closest && t.closest("[data-member-remove]");
    if (remove) {
      if (remove.dataset.confirm && !confirm(remove.dataset.confirm)) return;
      await act(remove, () => api("POST", `/api/companies/${companyId}/members/${remove.dataset.memberRemove}/archive`, {}),
        "Member removed");
      return;
    }
    const revoke = t.closest && t.closest("[data-invite-revoke]");
    if (revoke) {
      await act(revoke, () => api("POST", `/api/invites/${revoke.dataset.inviteRevoke}/revoke`, {}), "Invite revoked");
    }
  });
})();
