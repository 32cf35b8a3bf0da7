// Loaded with `node --import` into each upstream CLI process of the sweep: it appends
// one line per HTTP exchange (method, path, status, the start of an error body) to
// $SWEEP_HTTP_LOG, so a failure is classified by the status the server gave, not by
// the CLI's wording. It changes nothing the CLI sends or receives.
import { appendFileSync } from "node:fs";

const log = process.env.SWEEP_HTTP_LOG;
const realFetch = globalThis.fetch;
if (log && realFetch) {
  globalThis.fetch = async (input, init) => {
    const url = new URL(typeof input === "string" ? input : input.url ?? String(input));
    const method = (init?.method ?? input?.method ?? "GET").toUpperCase();
    const res = await realFetch(input, init);
    let body = "";
    if (res.status >= 400) {
      try {
        body = (await res.clone().text()).slice(0, 200).replace(/\s+/g, " ");
      } catch {}
    }
    appendFileSync(
      log,
      JSON.stringify({ method, path: url.pathname, status: res.status, body }) + "\n",
    );
    return res;
  };
}
