// Web Push and the installable app: every page registers the service worker
// (/sw.js) where the browser allows one (https, or http on this machine);
// the account page's Notifications section subscribes this device with the
// server's VAPID key, saves what to be told about, and sends a test.
(function () {
  "use strict";

  const canWork = window.isSecureContext && "serviceWorker" in navigator;
  const registered = canWork
    ? navigator.serviceWorker.register("/sw.js").catch(() => null)
    : Promise.resolve(null);

  // The VAPID key arrives as base64url; pushManager wants its bytes.
  function keyBytes(text) {
    const b64 = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
    return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  }

  document.addEventListener("DOMContentLoaded", async () => {
    const box = document.getElementById("push-settings");
    if (!box) return;
    const P = window.Paperclip;
    const status = document.getElementById("push-status");
    const enable = document.getElementById("push-enable");
    const disable = document.getElementById("push-disable");
    const test = document.getElementById("push-test");
    const say = (text) => { status.textContent = text; };

    const pushable = canWork && "PushManager" in window && "Notification" in window;
    if (!pushable) {
      document.getElementById("push-needs").hidden = false;
      say(window.isSecureContext
        ? "This browser cannot receive push notifications."
        : "Not available on this page: it is not served securely.");
      return;
    }

    async function current() {
      const reg = await registered;
      return reg ? reg.pushManager.getSubscription() : null;
    }

    async function show() {
      const sub = await current();
      enable.hidden = !!sub;
      disable.hidden = !sub;
      if (Notification.permission === "denied") {
        say("Notifications are blocked for this site: allow them in the browser's site settings.");
        enable.hidden = true;
      } else {
        say(sub ? "This device gets notifications." : "This device does not get notifications yet.");
      }
    }

    enable.addEventListener("click", () => P.act(enable, async () => {
      const permission = await Notification.requestPermission();
      if (permission !== "granted") throw new Error("Notifications were not allowed on this device");
      const reg = await navigator.serviceWorker.ready;
      const { publicKey } = await P.api("GET", "/api/push/vapid-public-key");
      let sub = await reg.pushManager.getSubscription();
      // A subscription made with another key (a reset server) cannot be used.
      if (sub) await sub.unsubscribe();
      sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(publicKey) });
      await P.api("POST", "/api/push/subscriptions", sub.toJSON());
      await show();
    }, "Notifications are on for this device"));

    disable.addEventListener("click", () => P.act(disable, async () => {
      const sub = await current();
      if (sub) {
        const mine = await P.api("GET", "/api/push/subscriptions");
        const row = (mine || []).find((s) => s.endpoint === sub.endpoint);
        if (row) await P.api("DELETE", `/api/push/subscriptions/${encodeURIComponent(row.id)}`);
        await sub.unsubscribe();
      }
      await show();
    }, "Notifications are off for this device"));

    test.addEventListener("click", () => P.act(test, async () => {
      const sent = await P.api("POST", "/api/push/test", {});
      if (!sent.delivered) throw new Error("No device of yours took it: enable notifications first");
      P.toast(`Sent to ${sent.delivered} device${sent.delivered === 1 ? "" : "s"}`);
    }));

    document.getElementById("push-kinds").addEventListener("change", (e) => {
      const box = e.target;
      if (!box.name) return;
      P.act(null, () => P.api("PATCH", "/api/push/preferences", { [box.name]: box.checked }), "Saved");
    });

    show();
  });
})();
