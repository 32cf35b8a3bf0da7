// Company settings (pages/settings.rs): saving with PATCH /api/companies/{id},
// the logo, archiving and restoring, and copying the company id.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { $, api, act, toast, value, prefix, csrfHeader } = P;

  P.forms["company-settings"] = async (form) => {
    const name = value(form, "name");
    if (!name) throw new Error("Name: a company needs a name");
    const dollars = value(form, "budgetDollars");
    const budget = dollars === "" ? 0 : Number(dollars);
    if (!(budget >= 0)) throw new Error("Monthly budget: enter 0 (no limit) or a positive amount of dollars");
    const keep = value(form, "runLogRetentionDays");
    const days = keep === "" || keep == null ? null : Number(keep);
    if (days !== null && !(Number.isInteger(days) && days >= 1 && days <= 3650)) {
      throw new Error("Keep run logs: enter a number of days from 1 to 3650, or leave it empty to keep every log");
    }
    const optionalInt = (field, label, max) => {
      const raw = value(form, field);
      if (raw === "" || raw == null) return null;
      const n = Number(raw);
      if (!(Number.isInteger(n) && n >= 1 && n <= max)) {
        throw new Error(`${label}: enter a whole number from 1 to ${max}, or leave it empty for the default`);
      }
      return n;
    };
    const workspaceRetentionDays = optionalInt("workspaceRetentionDays", "Worktree retention", 3650);
    const workspaceDiskBudgetMb = optionalInt("workspaceDiskBudgetMb", "Worktree disk budget", 1073741824);
    const company = await api("PATCH", `/api/companies/${form.dataset.companyId}`, {
      name,
      description: value(form, "description") || null,
      requireBoardApprovalForNewAgents: value(form, "requireBoardApprovalForNewAgents"),
      budgetMonthlyCents: Math.round(budget * 100),
      runLogRetentionDays: days,
      workspaceRetentionDays,
      workspaceDiskBudgetMb,
    });
    // The switcher is outside the re-rendered region; name the company there too.
    const option = $(`#company-switcher option[value="${prefix}"]`);
    if (option && company) option.textContent = company.name;
    toast("Settings saved");
    P.refreshSoon(50);
  };

  // The logo: the image is uploaded as an asset, then named as the logo.
  // The sidebar shows it outside the re-rendered region: reload after.
  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest && ev.target.closest("form[data-upload-logo]");
    if (!form) return;
    ev.preventDefault();
    const input = form.querySelector("input[type=file]");
    const file = input && input.files && input.files[0];
    if (!file) { toast("Choose an image first", "error"); return; }
    const id = form.dataset.uploadLogo;
    const data = new FormData();
    data.append("file", file, file.name);
    const button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    try {
      const res = await fetch(`/api/companies/${id}/logo`, {
        method: "POST", body: data, headers: { accept: "application/json", ...csrfHeader() },
      });
      const text = await res.text();
      let body = null;
      try { body = text ? JSON.parse(text) : null; } catch (_) { body = text; }
      if (!res.ok) throw new Error((body && body.error) || `Upload failed (${res.status})`);
      await api("PATCH", `/api/companies/${id}/branding`, { logoAssetId: body.assetId });
      toast("Logo saved");
      setTimeout(() => location.reload(), 600);
    } catch (e) {
      toast(e.message, "error");
    } finally {
      if (button) button.disabled = false;
    }
  });

  document.addEventListener("click", async (ev) => {
    const t = ev.target;
    const remove = t.closest && t.closest("[data-remove-logo]");
    if (remove) {
      const done = await act(remove,
        () => api("PATCH", `/api/companies/${remove.dataset.removeLogo}/branding`, { logoAssetId: null }),
        "Logo removed");
      if (done) setTimeout(() => location.reload(), 600);
      return;
    }
    const copy = t.closest && t.closest("[data-copy]");
    if (copy) {
      const text = ($(copy.dataset.copy) || {}).textContent || "";
      try {
        await navigator.clipboard.writeText(text);
        toast("Company id copied");
      } catch (_) {
        // No clipboard access (plain http on another host): select it instead.
        const range = document.createRange();
        range.selectNodeContents($(copy.dataset.copy));
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        toast("Press Ctrl+C to copy the selected id");
      }
      return;
    }
    const status = t.closest && t.closest("[data-company-status]");
    if (!status) return;
    if (status.dataset.confirm && !confirm(status.dataset.confirm)) return;
    const id = status.dataset.companyId;
    const archive = status.dataset.companyStatus === "archived";
    const done = await act(status,
      () => archive ? api("POST", `/api/companies/${id}/archive`) : api("PATCH", `/api/companies/${id}`, { status: "active" }),
      archive ? "Company archived" : "Company restored");
    // The danger zone is outside the live region: reload to show the new state.
    if (done) setTimeout(() => location.reload(), 800);
  });
})();
