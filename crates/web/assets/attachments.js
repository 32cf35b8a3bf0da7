// Attachments (pages/task_files.rs): the upload form sends the chosen file
// as multipart to the upload route, with the session's CSRF header like
// every write; the list and the cards re-render from the live stream.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { toast, csrfHeader } = P;

  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest && ev.target.closest("form[data-upload-issue]");
    if (!form) return;
    ev.preventDefault();
    const input = form.querySelector("input[type=file]");
    const file = input && input.files && input.files[0];
    if (!file) { toast("Choose a file first", "error"); return; }
    const data = new FormData();
    data.append("file", file, file.name);
    const button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    try {
      const url = `/api/companies/${form.dataset.uploadCompany}/issues/${form.dataset.uploadIssue}/attachments`;
      const res = await fetch(url, { method: "POST", body: data, headers: { accept: "application/json", ...csrfHeader() } });
      const text = await res.text();
      let body = null;
      try { body = text ? JSON.parse(text) : null; } catch (_) { body = text; }
      if (!res.ok) throw new Error((body && body.error) || `Upload failed (${res.status})`);
      form.reset();
      toast(`${file.name} attached`);
      P.refreshSoon(50);
    } catch (e) {
      toast(e.message, "error");
    } finally {
      if (button) button.disabled = false;
    }
  });
})();
