// The task thread: a live run's output streams into its card, and run
// clocks tick. The page's live region is re-rendered from the server on
// events (app.js); each streaming box is kept here and put back in place of
// the fresh copy after every re-render, so lines already shown survive and
// the log is read once, by byte offset (GET /api/heartbeat-runs/:id/log).
// A `heartbeat.run.log` event of a followed run reads on at once; a slow
// poll covers a dropped stream. Only the last LINES_KEPT lines stay in the
// page; the run page has the whole log.
"use strict";

(() => {
  const P = window.Paperclip;
  if (!P) return;

  const LINES_KEPT = 500;
  const PAGE_BYTES = 64 * 1024;
  const POLL_MS = 2000;
  const streams = new Map();

  function follow(box) {
    const pre = box.querySelector("pre.stream");
    if (!pre) return null;
    const from = Number(box.dataset.logFrom || 0);
    const st = {
      id: box.dataset.streamRun, box, pre, note: box.querySelector(".stream-note"),
      offset: from, midLine: from > 0, lines: 0, dropped: 0,
      open: null, openStream: null, busy: false, again: false, live: true, stick: true,
    };
    pre.textContent = "";
    const empty = box.querySelector(".stream-empty");
    if (empty) empty.remove();
    // Follows the end unless the person scrolled up to read.
    pre.addEventListener("scroll", () => {
      st.stick = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
    });
    streams.set(st.id, st);
    return st;
  }

  // After a render: keep each followed box, start following new live runs,
  // read a finished run's last lines once, forget runs no longer shown.
  function adopt() {
    const seen = new Set();
    for (const box of P.$$("[data-stream-run]")) {
      const id = box.dataset.streamRun;
      const live = box.dataset.live === "1";
      seen.add(id);
      let st = streams.get(id);
      if (st) {
        if (box !== st.box) {
          box.replaceWith(st.box);
          if (st.stick) st.pre.scrollTop = st.pre.scrollHeight;
        }
        st.box.dataset.live = live ? "1" : "0";
        if (st.live && !live) {
          st.live = false;
          pull(st);
        }
        continue;
      }
      if (live && (st = follow(box))) pull(st);
    }
    for (const id of [...streams.keys()]) if (!seen.has(id)) streams.delete(id);
    tick();
  }

  async function pull(st) {
    if (st.busy) {
      st.again = true;
      return;
    }
    st.busy = true;
    try {
      // A few pages at most per call: a long log catches up over calls.
      for (let i = 0; i < 8; i++) {
        const page = await P.api("GET", `/api/heartbeat-runs/${st.id}/log?offset=${st.offset}&limitBytes=${PAGE_BYTES}`);
        if (!page || page.nextOffset <= st.offset) break;
        let content = page.content || "";
        // Read from the middle of the log: its first line may be a part.
        if (st.midLine) {
          content = content.slice(content.indexOf("\n") + 1);
          st.midLine = false;
        }
        st.offset = page.nextOffset;
        append(st, content);
        if (page.nextOffset - page.offset < PAGE_BYTES / 2) break;
      }
    } catch (_) {
      // The next event or poll tries again.
    } finally {
      st.busy = false;
      if (st.again) {
        st.again = false;
        pull(st);
      }
    }
  }

  // NDJSON lines {stream, chunk}: chunks become lines, a chunk without its
  // newline is continued by the next chunk of the same stream.
  function append(st, content) {
    for (const raw of content.split("\n")) {
      if (!raw) continue;
      let rec;
      try { rec = JSON.parse(raw); } catch (_) { continue; }
      const stream = rec.stream || "stdout";
      const parts = String(rec.chunk == null ? "" : rec.chunk).split(/(?<=\n)/);
      for (const part of parts) {
        if (!part) continue;
        const ended = part.endsWith("\n");
        const text = ended ? part.slice(0, -1) : part;
        if (st.open && st.openStream === stream) {
          st.open.textContent += text;
        } else {
          const line = document.createElement("span");
          line.className = `line${stream === "stderr" ? " log-err" : stream === "system" ? " log-sys" : ""}`;
          line.textContent = text;
          st.pre.appendChild(line);
          st.lines++;
          st.open = line;
          st.openStream = stream;
        }
        if (ended) st.open = null;
      }
    }
    while (st.lines > LINES_KEPT && st.pre.firstChild) {
      if (st.pre.firstChild === st.open) st.open = null;
      st.pre.firstChild.remove();
      st.lines--;
      st.dropped++;
    }
    if (st.dropped && st.note) {
      st.note.hidden = false;
      st.note.textContent = `${st.dropped} earlier line${st.dropped === 1 ? " is" : "s are"} on the `;
      const a = document.createElement("a");
      a.href = st.box.dataset.runPage || "#";
      a.textContent = "run page";
      st.note.append(a, ".");
    }
    if (st.stick) st.pre.scrollTop = st.pre.scrollHeight;
  }

  // "running for 5 s", counted on in the page between renders.
  function span(ms) {
    const s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
    return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  }

  function tick() {
    const now = Date.now();
    for (const el of P.$$("[data-running-since]")) {
      const t = Date.parse(el.dataset.runningSince);
      if (!Number.isNaN(t)) el.textContent = `running for ${span(now - t)}`;
    }
    for (const el of P.$$("[data-queued-since]")) {
      const t = Date.parse(el.dataset.queuedSince);
      if (!Number.isNaN(t)) el.textContent = `queued for ${span(now - t)}`;
    }
  }

  function runOf(ev) {
    try {
      const d = JSON.parse(ev.data);
      return d.entityId || (d.payload && d.payload.runId);
    } catch (_) {
      return null;
    }
  }

  document.addEventListener("paperclip:refreshed", adopt);
  document.addEventListener("DOMContentLoaded", () => {
    adopt();
    const source = window.paperclipEvents;
    if (source) {
      source.addEventListener("heartbeat.run.log", (ev) => {
        const st = streams.get(runOf(ev));
        if (st && st.live) pull(st);
      });
    }
    setInterval(tick, 1000);
    setInterval(() => {
      for (const st of streams.values()) if (st.live) pull(st);
    }, POLL_MS);
  });
})();
