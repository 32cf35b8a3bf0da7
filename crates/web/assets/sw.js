// The board's service worker, at /sw.js so its scope is the whole board.
// Pages are network-first: offline, a navigation gets the offline shell
// (never a stale board). The stylesheet, scripts and icons are fetched
// fresh and kept as a fallback. /api and the live event stream are never
// touched. Push: shows what the server sent; an action (Approve, Reject,
// a typed reply) POSTs the notification's signed one-use link without
// cookies, since the link itself names the person and the action.
const CACHE = 'paperclip-__VERSION__';
const SHELL = '/ui/offline.html';
const PRECACHE = __PRECACHE__;
const ICON = '/ui/icons/icon-192.png';

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((c) => c.addAll(PRECACHE)).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const key of await caches.keys()) {
      if (key.startsWith('paperclip-') && key !== CACHE) await caches.delete(key);
    }
    await self.clients.claim();
  })());
});

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET') return;
  const url = new URL(req.url);
  if (url.origin !== self.location.origin || url.pathname.startsWith('/api/')) return;
  if (req.mode === 'navigate') {
    event.respondWith(fetch(req).catch(async () => (await caches.match(SHELL)) || Response.error()));
    return;
  }
  if (url.pathname.startsWith('/ui/') && url.pathname !== '/ui/preview') {
    event.respondWith((async () => {
      try {
        const fresh = await fetch(req);
        if (fresh.ok) {
          const copy = fresh.clone();
          caches.open(CACHE).then((c) => c.put(req, copy));
        }
        return fresh;
      } catch (e) {
        return (await caches.match(req)) || Response.error();
      }
    })());
  }
});

self.addEventListener('push', (event) => {
  let data;
  try {
    data = event.data ? event.data.json() : {};
  } catch (e) {
    data = { title: 'Paperclip', body: event.data ? event.data.text() : '' };
  }
  const links = {};
  const actions = [];
  for (const a of data.actions || []) {
    if (a.link) links[a.action] = a.link;
    const shown = { action: a.action, title: a.title };
    if (a.type === 'text') {
      shown.type = 'text';
      shown.placeholder = a.placeholder || '';
    }
    actions.push(shown);
  }
  event.waitUntil(self.registration.showNotification(data.title || 'Paperclip', {
    body: data.body || '',
    tag: data.tag || undefined,
    icon: ICON,
    badge: ICON,
    actions,
    requireInteraction: data.kind === 'approval' || data.kind === 'question',
    data: { url: data.url || '/', links, kind: data.kind, title: data.title || '' },
  }));
});

self.addEventListener('notificationclick', (event) => {
  const note = event.notification;
  const d = note.data || {};
  note.close();
  const link = event.action && d.links ? d.links[event.action] : null;
  // Without inline replies (some platforms) a reply opens the task instead.
  if (link && !(event.action === 'reply' && !event.reply)) {
    event.waitUntil(act(link, event.action, event.reply, d));
  } else {
    event.waitUntil(open(d.url || '/'));
  }
});

async function act(link, action, reply, d) {
  let ok = false;
  let why = 'the server could not be reached';
  try {
    const res = await fetch(link, {
      method: 'POST',
      credentials: 'omit',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(reply ? { reply } : {}),
    });
    ok = res.ok;
    if (!ok) why = ((await res.json().catch(() => ({}))).error) || ('answer ' + res.status);
  } catch (e) { /* offline: say so below */ }
  const done = { approve: 'Approved', reject: 'Rejected', reply: 'Reply sent' }[action] || 'Done';
  await self.registration.showNotification(ok ? done : 'Not done: ' + why, {
    body: d.title || '',
    tag: (d.kind || 'paperclip') + '-result',
    icon: ICON,
    data: { url: d.url || '/' },
  });
}

async function open(url) {
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  for (const w of windows) {
    if (new URL(w.url).pathname === url && 'focus' in w) return w.focus();
  }
  if (windows[0] && 'navigate' in windows[0]) {
    await windows[0].focus();
    return windows[0].navigate(url);
  }
  return self.clients.openWindow(url);
}
