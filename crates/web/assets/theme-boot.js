// Runs before the first paint: the person's stored theme (theme.js).
try { var t = localStorage.getItem("paperclip-theme"); if (t === "light" || t === "dark") document.documentElement.dataset.theme = t; } catch (e) {}
