// "Try a sample company" (welcome page, New company dialog): creates the
// sample company, or finds the one made before, and opens its dashboard.
"use strict";

document.addEventListener("click", async (ev) => {
  const button = ev.target.closest("[data-sample-company]");
  if (!button) return;
  const { api, toast } = window.Paperclip;
  button.disabled = true;
  try {
    const company = await api("POST", "/api/sample-company", {});
    location.href = `/${company.issuePrefix}/dashboard`;
  } catch (e) {
    toast(e.message, "error");
    button.disabled = false;
  }
});
