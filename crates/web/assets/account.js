// Sign-in, invite links and sign-out on an authenticated instance. Plain
// fetch calls to upstream's auth routes; the session cookie is HttpOnly, and
// the CSRF token the sign-in answers with goes with the next write.
(function () {
  "use strict";

  async function post(url, body, csrf) {
    const headers = { accept: "application/json", "content-type": "application/json" };
    if (csrf) headers["x-paperclip-csrf"] = csrf;
    const res = await fetch(url, { method: "POST", headers, body: JSON.stringify(body || {}) });
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (_) { data = null; }
    if (!res.ok) {
      let message = (data && data.error) || `Request failed (${res.status})`;
      const d = data && data.details;
      if (Array.isArray(d) && d.length) message += ": " + d.map((i) => i.message).join("; ");
      throw new Error(message);
    }
    return data;
  }

  function say(message) {
    const box = document.getElementById("toasts");
    if (!box) return alert(message);
    const el = document.createElement("div");
    el.className = "toast error";
    el.setAttribute("role", "alert");
    el.textContent = message;
    box.appendChild(el);
    setTimeout(() => el.remove(), 8000);
  }

  function fields(form) {
    return Object.fromEntries(new FormData(form).entries());
  }

  function next() {
    const n = new URLSearchParams(location.search).get("next");
    return n && n.startsWith("/") && !n.startsWith("//") ? n : "/";
  }

  async function join(token, csrf) {
    await post(`/api/invites/${encodeURIComponent(token)}/accept`, { requestType: "human" }, csrf);
    location.href = "/";
  }

  document.addEventListener("submit", async (e) => {
    const form = e.target;
    const main = document.querySelector("[data-invite]");
    const token = main && main.dataset.invite;
    try {
      if (form.matches("[data-sign-in]")) {
        e.preventDefault();
        await post("/api/auth/sign-in/email", fields(form));
        location.href = next();
      } else if (form.matches("[data-invite-sign-up]")) {
        e.preventDefault();
        const s = await post("/api/auth/sign-up/email", { ...fields(form), inviteToken: token });
        await join(token, s.csrfToken);
      } else if (form.matches("[data-invite-sign-in]")) {
        e.preventDefault();
        const s = await post("/api/auth/sign-in/email", fields(form));
        await join(token, s.csrfToken);
      }
    } catch (err) {
      say(err.message);
    }
  });

  document.addEventListener("click", async (e) => {
    const button = e.target.closest("[data-sign-out]");
    if (!button) return;
    const meta = document.querySelector('meta[name="paperclip-csrf"]');
    try {
      await post("/api/auth/sign-out", {}, meta && meta.content);
      location.href = "/login";
    } catch (err) {
      say(err.message);
    }
  });

  // What the invite is for, once the page is there.
  document.addEventListener("DOMContentLoaded", async () => {
    const main = document.querySelector("[data-invite]");
    if (!main) return;
    const res = await fetch(`/api/invites/${encodeURIComponent(main.dataset.invite)}`);
    const title = document.getElementById("invite-title");
    const detail = document.getElementById("invite-detail");
    if (!res.ok) {
      title.textContent = "This invite cannot be used";
      detail.textContent = "It was used already, revoked or has expired: ask for a new link.";
      return;
    }
    const invite = await res.json();
    title.textContent = invite.inviteType === "bootstrap_ceo"
      ? "Become this instance's administrator"
      : `Join ${invite.companyName} as ${invite.humanRole}`;
  });
})();
