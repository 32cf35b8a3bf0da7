// Project repositories (pages/project.rs, pages/misc.rs): the repository
// dialog, filled from the API when it opens, creates or updates the
// project's primary workspace; the new-project form takes an optional
// repository path. A refused path (not absolute, not a git repository: the
// API's 422) is shown beside the form as well as in a toast.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { $, api, toast, value, optional } = P;

  function showError(form, message) {
    const box = $(".form-error", form);
    if (!box) return;
    box.textContent = message || "";
    box.hidden = !message;
  }

  document.addEventListener("click", async (ev) => {
    const opener = ev.target.closest && ev.target.closest("[data-edit-repository]");
    if (!opener) return;
    const form = $("#project-repository form");
    if (!form) return;
    opener.disabled = true;
    try {
      const list = (await api("GET", `/api/projects/${opener.dataset.editRepository}/workspaces`)) || [];
      const primary = list.find((w) => w.isPrimary) || list[0];
      form.elements.namedItem("cwd").value = (primary && primary.cwd) || "";
      form.elements.namedItem("defaultRef").value = (primary && primary.defaultRef) || "";
      if (primary) form.dataset.workspaceId = primary.id;
      else delete form.dataset.workspaceId;
      showError(form, "");
      await P.openDialog("project-repository");
    } catch (e) {
      toast(e.message, "error");
    } finally {
      opener.disabled = false;
    }
  });

  P.forms["project-repository"] = async (form) => {
    showError(form, "");
    const base = `/api/projects/${form.dataset.projectId}/workspaces`;
    const cwd = value(form, "cwd");
    const defaultRef = value(form, "defaultRef");
    try {
      if (form.dataset.workspaceId) {
        await api("PATCH", `${base}/${form.dataset.workspaceId}`, { cwd, defaultRef: defaultRef || null });
      } else {
        await api("POST", base, { cwd, defaultRef: optional(defaultRef) });
      }
    } catch (e) {
      showError(form, e.message);
      throw e;
    }
    P.closeDialog(form);
    toast("Repository saved");
    P.refreshSoon(50);
  };

  // A new project with a repository is two requests; when the repository is
  // refused the project is removed again, so fixing the path and adding
  // once more makes one project, not two.
  P.forms.project = async (form) => {
    showError(form, "");
    const project = await api("POST", form.dataset.url, { name: value(form, "name") });
    const cwd = optional(value(form, "cwd"));
    if (cwd) {
      try {
        await api("POST", `/api/projects/${project.id}/workspaces`, { cwd });
      } catch (e) {
        await api("DELETE", `/api/projects/${project.id}`).catch(() => {});
        // Held through live updates until it is sent again.
        form.dataset.dirty = "1";
        const message = `Repository refused: ${e.message}`;
        showError(form, message);
        throw new Error(message);
      }
    }
    delete form.dataset.dirty;
    form.reset();
    toast("Project added");
    P.refreshSoon(50);
  };
})();
