// Company packages (pages/company_port.rs): export as a download, import a
// picked folder or .json export with a dry run first, and start a company
// from a starter template.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;
  const { $, api, toast } = P;
  let pending = null;

  const textFiles = async (input) => {
    const files = {};
    for (const f of Array.from(input.files || [])) {
      if (f.name.endsWith(".json")) {
        const exported = JSON.parse(await f.text());
        for (const [path, content] of Object.entries(exported.files || {})) {
          if (typeof content === "string") files[path] = content;
        }
        continue;
      }
      const rel = (f.webkitRelativePath || f.name).split("/");
      // A folder pick names files under the folder: drop that first part.
      if (rel.length > 1) rel.shift();
      const path = rel.join("/");
      if (path.endsWith(".md") || path.endsWith(".paperclip.yaml")) files[path] = await f.text();
    }
    return files;
  };

  const plan = (box, preview) => {
    box.replaceChildren();
    const rows = [
      ["Agents", preview.plan.agentPlans, "plannedName"],
      ["Goals", preview.plan.goalPlans || [], "plannedTitle"],
      ["Projects", preview.plan.projectPlans, "plannedName"],
      ["Tasks and routines", preview.plan.issuePlans, "plannedTitle"],
    ];
    for (const [title, items, key] of rows) {
      const h = document.createElement("h4");
      h.textContent = `${title} (${items.length})`;
      const ul = document.createElement("ul");
      ul.className = "port-plan";
      for (const item of items) {
        const li = document.createElement("li");
        li.dataset.action = item.action;
        li.textContent = `${item.action === "skip" ? "Skip" : "Create"} ${item[key]}${item.reason ? ` (${item.reason})` : ""}`;
        ul.append(li);
      }
      box.append(h, ul);
    }
    for (const w of preview.warnings || []) {
      const p = document.createElement("p");
      p.className = "muted";
      p.textContent = `Note: ${w}`;
      box.append(p);
    }
  };

  document.addEventListener("change", async (ev) => {
    const input = ev.target.closest("[data-port-pick]");
    if (!input) return;
    const card = input.closest("#company-port");
    pending = { files: await textFiles(input) };
    const n = Object.keys(pending.files).length;
    card.querySelector("[data-port-preview]").disabled = n === 0;
    card.querySelector("[data-port-apply]").disabled = true;
    card.querySelector("#port-plan").textContent = n ? `${n} files read. Preview to see what would change.` : "No package files in that pick.";
  });

  const body = (card) => ({
    source: { type: "inline", files: pending.files, expectedFileCount: Object.keys(pending.files).length },
    target: { mode: "existing_company", companyId: card.dataset.companyId },
    collisionStrategy: card.querySelector("[data-port-collision]").value,
    agents: "all",
  });

  document.addEventListener("click", async (ev) => {
    const exp = ev.target.closest("[data-port-export]");
    const prev = ev.target.closest("[data-port-preview]");
    const apply = ev.target.closest("[data-port-apply]");
    const tpl = ev.target.closest("[data-company-template]");
    if (!exp && !prev && !apply && !tpl) return;
    const button = exp || prev || apply || tpl;
    button.disabled = true;
    try {
      if (tpl) {
        const result = await api("POST", "/api/companies/import", {
          source: { type: "template", name: tpl.dataset.companyTemplate },
          target: { mode: "new_company" },
        });
        const company = await api("GET", `/api/companies/${result.company.id}`);
        location.href = `/${company.issuePrefix}/dashboard`;
        return;
      }
      const card = button.closest("#company-port");
      const id = card.dataset.companyId;
      if (exp) {
        const pkg = await api("POST", `/api/companies/${id}/exports`, { include: { agents: true, projects: true, issues: true } });
        const blob = new Blob([JSON.stringify(pkg, null, 2)], { type: "application/json" });
        const a = document.createElement("a");
        a.href = URL.createObjectURL(blob);
        a.download = `${pkg.rootPath || "company"}.json`;
        document.body.append(a);
        a.click();
        a.remove();
        toast(`Exported ${Object.keys(pkg.files).length} files${pkg.warnings.length ? ` (${pkg.warnings.length} notes)` : ""}`);
      } else if (prev) {
        const preview = await api("POST", `/api/companies/${id}/imports/preview`, body(card));
        plan(card.querySelector("#port-plan"), preview);
        card.querySelector("[data-port-apply]").disabled = false;
      } else {
        const result = await api("POST", `/api/companies/${id}/imports/apply`, body(card));
        const made = (l) => (l || []).filter((d) => d.action === "created").length;
        card.querySelector("#port-plan").textContent =
          `Imported: ${made(result.agents)} agents, ${made(result.goals)} goals, ${made(result.projects)} projects, ${made(result.tasks)} tasks, ${made(result.routines)} routines.`;
        toast("Import applied");
        return;
      }
    } catch (e) {
      toast(e.message, "error");
    }
    button.disabled = false;
  });
})();
