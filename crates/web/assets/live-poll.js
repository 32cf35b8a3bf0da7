// The fallback when live events are unavailable (seed 004: "if the live
// stream disconnects, the client falls back to short polling until it
// reconnects"): while the stream is not open, the page re-renders every few
// seconds and says so where "live" usually is; once the stream is back,
// polling stops. A stream the browser gave up on is reopened now and then.
(() => {
  const { $, refreshSoon, companyId } = window.Paperclip;
  const POLL_MS = 3000;
  // A reconnect that works within this long is not worth a poll.
  const GRACE_MS = 2000;
  const REOPEN_MS = 5000;
  let polling = null;
  let downSince = null;
  let closedSince = null;

  function say() {
    const s = $("#live-state");
    if (!s) return;
    s.textContent = "live updates unavailable · checking every 3 s";
    s.className = "live-state polling";
    s.title = "The live event stream cannot be reached; the page refreshes itself until it is back.";
  }

  function start() {
    if (polling) return;
    polling = setInterval(() => refreshSoon(0), POLL_MS);
    refreshSoon(0);
  }

  function stop() {
    if (!polling) return;
    clearInterval(polling);
    polling = null;
    // Back: the label app.js gives an open stream.
    const s = $("#live-state");
    if (s) { s.textContent = "live"; s.className = "live-state on"; s.title = ""; }
  }

  let watched = null;

  function check() {
    const source = window.paperclipEvents;
    // Each failed retry says "reconnecting…" (app.js): while polling, this
    // label says what is really happening, right after it.
    if (source && source !== watched) {
      watched = source;
      source.addEventListener("error", () => { if (polling) say(); });
    }
    if (source && source.readyState === 1) {
      downSince = null;
      closedSince = null;
      stop();
      return;
    }
    const now = Date.now();
    downSince = downSince || now;
    if (now - downSince < GRACE_MS) return;
    start();
    say();

    // EventSource retries a dropped connection itself, but not one that was
    // answered with an error: that one is reopened here.
    if (source && source.readyState === 2 && window.Paperclip.reconnect) {
      closedSince = closedSince || now;
      if (now - closedSince >= REOPEN_MS) {
        closedSince = null;
        source.close();
        window.Paperclip.reconnect();
      }
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    if (!companyId) return;
    setInterval(check, 1000);
  });
  // A re-render brings a fresh "live" label: keep saying we are polling.
  document.addEventListener("paperclip:refreshed", () => {
    const source = window.paperclipEvents;
    if (polling && !(source && source.readyState === 1)) say();
  });
})();
