// The colour theme: System (no data-theme; the stylesheet follows
// prefers-color-scheme), Light or Dark, remembered in localStorage. The head
// applies the stored choice before the first paint; this labels the toggle
// and cycles it.
(() => {
  const KEY = "paperclip-theme";
  const ORDER = ["system", "light", "dark"];
  const current = () => {
    try { return localStorage.getItem(KEY) || "system"; } catch (_) { return "system"; }
  };
  function apply(choice) {
    const root = document.documentElement;
    if (choice === "system") delete root.dataset.theme; else root.dataset.theme = choice;
    try {
      if (choice === "system") localStorage.removeItem(KEY); else localStorage.setItem(KEY, choice);
    } catch (_) { /* private mode: the choice lasts for this page */ }
    label();
  }
  function label() {
    for (const b of document.querySelectorAll("[data-theme-toggle]")) {
      const c = document.documentElement.dataset.theme || "system";
      b.textContent = `Theme: ${c}`;
      b.setAttribute("aria-label", `Colour theme: ${c}. Click for the next one.`);
    }
  }
  document.addEventListener("click", (ev) => {
    const b = ev.target.closest && ev.target.closest("[data-theme-toggle]");
    if (!b) return;
    const c = document.documentElement.dataset.theme || current();
    apply(ORDER[(ORDER.indexOf(c) + 1) % ORDER.length]);
  });
  document.addEventListener("DOMContentLoaded", label);
})();
