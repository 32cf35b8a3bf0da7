// "Start with a chief of staff" (an empty company's dashboard, the first-run
// page): hires the chief with the chosen adapter (or the example chief) and
// opens the chat with it; on the first run the company is made first.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;

  function request(form) {
    const kind = P.value(form, "adapterType");
    return kind && kind !== "example" ? { adapterType: kind, adapterConfig: {} } : {};
  }

  async function start(companyId, prefix, form) {
    const chief = await P.api("POST", `/api/companies/${companyId}/chief`, request(form));
    location.href = `/${prefix}/chats/${encodeURIComponent(chief.agent.urlKey)}`;
  }

  P.forms["chief-start"] = async (form) => {
    await start(form.dataset.companyId, P.prefix, form);
  };

  P.forms["chief-first-run"] = async (form) => {
    const company = await P.api("POST", "/api/companies", { name: P.value(form, "name") });
    await start(company.id, company.issuePrefix, form);
  };
})();
