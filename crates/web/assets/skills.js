// The Skills page and the agent page's skills section (pages/skills.rs):
// installs from a folder or git URL through upstream's skill import, and
// saves an agent's chosen skills as one sync (mode "replace").
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { api, toast } = P;

  P.forms["skill-import"] = async (form) => {
    const source = form.elements.source.value.trim();
    const res = await api("POST", `/api/companies/${form.dataset.companyId}/skills/import`, { source });
    const names = (res.imported || []).map((s) => s.name).join(", ");
    form.reset();
    toast(names ? `Installed: ${names}` : "Nothing new to install");
    for (const w of res.warnings || []) toast(w);
    P.refreshSoon(50);
  };

  P.forms["agent-skills"] = async (form) => {
    const desiredSkills = [...form.querySelectorAll("input[name=skill]:checked")].map((i) => i.value);
    await api("POST", form.dataset.url, { mode: "replace", desiredSkills });
    toast("Skills saved: the next run gets them");
    P.refreshSoon(50);
  };
})();
