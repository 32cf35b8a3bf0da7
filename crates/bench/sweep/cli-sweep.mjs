#!/usr/bin/env node
// The upstream CLI sweep: runs every client command of the original's CLI
// (`paperclipai`, the pinned package) against a server seeded through its API, and
// counts how many work. See BENCHMARKS.md, "Upstream CLI sweep".
//
//   node cli-sweep.mjs --base http://127.0.0.1:3100 --out orig.json      # a running server
//   node cli-sweep.mjs --ours sqlite --out ours-sqlite.json               # starts target/debug/paperclip
//   node cli-sweep.mjs --ours postgres --out ours-pg.json                 # same, on a fresh database
//   (--bin <path> another build of ours; --only <regex> a subset of the commands)
//   node cli-sweep.mjs --table ours-sqlite.json ours-pg.json orig.json    # the per-group table
//
// Run it with Node 24 (the CLI's): /opt/paperclip-ci/upstream-cli/node_modules/node/bin/node.
// One command at a time: the machine is shared.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { plan } from "./plan.mjs";
import { seed } from "./seed.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../..");
const CLI_DIR = process.env.SWEEP_CLI_DIR ?? "/opt/paperclip-ci/upstream-cli/node_modules";
const CLI = join(CLI_DIR, "paperclipai/dist/index.js");
const PG = process.env.SWEEP_PG_URL ?? "postgres://postgres@127.0.0.1:55432";

// Commands that manage an instance on this machine rather than talk to a server.
const EXCLUDED = [
  /^(install|uninstall|update|test-drive|onboard|doctor|env|channels|configure|db:backup|allowed-hostname)$/,
  /^run$/, // the bare `run` starts a server; `run list|get|...` are client commands and stay
  /^service( |$)/,
  /^worktree/, // worktree-local instances
  /^env-lab( |$)/, // local SSH fixtures
  /^routines disable-all$/, // writes the local instance's database
  /^auth bootstrap-ceo$/, // same
  /^plugin init$/, // scaffolds a folder
];

const args = process.argv.slice(2);
const flag = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};

const env0 = {
  ...process.env,
  PATH: `${join(CLI_DIR, ".bin")}:${process.env.PATH}`,
  NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), "paperclip-node-compile-cache"),
  NO_COLOR: "1",
};
for (const k of ["PAPERCLIP_API_KEY", "PAPERCLIP_RUN_ID", "PAPERCLIP_CONTEXT", "PAPERCLIP_AGENT_ID"]) delete env0[k];

export function enumerate() {
  const file = join(mkdtempSync(join(tmpdir(), "sweep-tree-")), "tree.json");
  spawnSync(process.execPath, ["--import", join(here, "tree-dump.mjs"), CLI], {
    env: { ...env0, SWEEP_TREE_OUT: file },
    stdio: "inherit",
  });
  const tree = JSON.parse(readFileSync(file, "utf8"));
  rmSync(dirname(file), { recursive: true, force: true });
  const leaves = [];
  const walk = (c) => {
    if (c.subs.length === 0 || (c.hasAction && c.path.length)) leaves.push(c);
    c.subs.forEach(walk);
  };
  walk(tree);
  const all = leaves.map((c) => ({ ...c, name: c.path.join(" ") }));
  const excluded = all.filter((c) => EXCLUDED.some((re) => re.test(c.name)));
  const client = all.filter((c) => !excluded.includes(c));
  return { all, excluded, client };
}

async function startOurs(engine) {
  const bin = flag("--bin") ?? join(repo, "target/debug/paperclip");
  const data = mkdtempSync(join(tmpdir(), "sweep-ours-"));
  let db;
  const cliArgs = ["run", "--port", "0", "--data-dir", data];
  if (engine === "postgres") {
    db = `sweep40_${process.pid}`;
    spawnSync("psql", [`${PG}/postgres`, "-qc", `drop database if exists ${db}`, "-c", `create database ${db}`], { stdio: "inherit" });
    cliArgs.push("--database-url", `${PG}/${db}`);
  }
  const child = spawn(bin, cliArgs, { stdio: ["ignore", "pipe", "pipe"] });
  const base = await new Promise((ok, fail) => {
    let text = "";
    const timer = setTimeout(() => fail(new Error(`no listening line: ${text}`)), 60000);
    child.stdout.on("data", (d) => {
      text += d;
      const m = /listening on (http:\/\/\S+)/.exec(text);
      if (m) {
        clearTimeout(timer);
        ok(m[1]);
      }
    });
    child.on("exit", (code) => fail(new Error(`server exited ${code}: ${text}`)));
  });
  child.stderr.resume();
  return {
    base,
    stop() {
      child.kill("SIGTERM");
      return new Promise((ok) => child.on("exit", ok)).then(() => {
        if (db) spawnSync("psql", [`${PG}/postgres`, "-qc", `drop database if exists ${db} with (force)`]);
        rmSync(data, { recursive: true, force: true });
      });
    },
  };
}

// A command works when it exits 0 and printed no HTTP error; else the class of its
// failure, from the last failed exchange the hook logged.
function classify(code, stdout, stderr, http, routes, timedOut) {
  const printed = /API error \d{3}|Request failed with status \d{3}/.test(stdout + stderr);
  if (code === 0 && !printed && !timedOut) return { ok: true, cls: "ok" };
  if (timedOut) return { ok: false, cls: "timeout" };
  const bad = http.filter((h) => h.status >= 400).at(-1);
  if (!bad) {
    const conn = /Could not reach the Paperclip API|fetch failed/.test(stderr);
    return { ok: false, cls: conn ? "connection" : "cli", detail: lastLine(stderr || stdout) };
  }
  const where = `${bad.method} ${bad.path} ${bad.status}`;
  if (bad.status === 405) return { ok: false, cls: "405 route", status: 405, detail: where };
  if (bad.status === 404) {
    const known = routes(bad.method, bad.path);
    return { ok: false, cls: known ? "404 entity" : "404 route", status: 404, detail: `${where} ${bad.body}` };
  }
  if (bad.status >= 500) return { ok: false, cls: "5xx", status: bad.status, detail: `${where} ${bad.body}` };
  return { ok: false, cls: `${bad.status}`, status: bad.status, detail: `${where} ${bad.body}` };
}

function lastLine(text) {
  return text.trim().split("\n").filter(Boolean).slice(-2).join(" | ").slice(0, 300);
}

// Route templates the server documents, to tell a missing route from a missing row.
async function routeMatcher(base) {
  const doc = await fetch(`${base}/api/openapi.json`).then((r) => (r.ok ? r.json() : null)).catch(() => null);
  const templates = Object.entries(doc?.paths ?? {}).map(([p, ops]) => ({
    re: new RegExp(`^${p.replace(/\{[^}]+\}|:[A-Za-z]+/g, "[^/]+")}$`),
    methods: Object.keys(ops).map((m) => m.toUpperCase()),
  }));
  if (templates.length === 0) return () => false;
  return (method, path) => templates.some((t) => t.re.test(path) && t.methods.includes(method));
}

function runOne(cmd, base, work) {
  const log = join(work, "http.ndjson");
  writeFileSync(log, "");
  const env = { ...env0, ...cmd.env, PAPERCLIP_API_URL: base, SWEEP_HTTP_LOG: log, HOME: work, PAPERCLIP_HOME: join(work, ".paperclip") };
  const started = Date.now();
  return new Promise((done) => {
    const child = spawn(process.execPath, ["--import", join(here, "http-log.mjs"), CLI, ...cmd.argv], {
      env,
      cwd: work,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, cmd.timeoutMs ?? 30000);
    child.on("close", (code) => {
      clearTimeout(timer);
      const http = readFileSync(log, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
      done({ code, stdout, stderr, http, timedOut, ms: Date.now() - started });
    });
  });
}

async function sweep(base, out) {
  const { all, excluded, client } = enumerate();
  console.error(`${all.length} commands; ${excluded.length} excluded (${excluded.map((c) => c.name).join(", ")}); ${client.length} client commands`);
  const work = mkdtempSync(join(tmpdir(), "sweep-work-"));
  mkdirSync(join(work, ".paperclip"), { recursive: true });
  const s = await seed(base, work);
  console.error(`seeded: ${Object.keys(s.ids).length} ids; seed steps failed: ${s.failed.join(", ") || "none"}`);
  const routes = await routeMatcher(base);
  const only = flag("--only") ? new RegExp(flag("--only")) : null;
  const steps = plan(client, s, base, work).filter((c) => !only || only.test(c.name));
  const results = [];
  for (const cmd of steps) {
    const r = await runOne(cmd, base, work);
    const c = classify(r.code, r.stdout, r.stderr, r.http, routes, r.timedOut);
    if (c.ok && cmd.capture) {
      try {
        cmd.capture(JSON.parse(r.stdout), s.ids);
      } catch {}
    }
    results.push({ name: cmd.name, group: cmd.path[0], argv: cmd.argv.join(" "), ...c, ms: r.ms });
    console.error(`${c.ok ? "ok  " : "FAIL"} ${cmd.name.padEnd(40)} ${c.cls}${c.detail ? " " + c.detail.slice(0, 160) : ""}`);
  }
  const ok = results.filter((r) => r.ok).length;
  console.error(`\n${ok} of ${results.length} client commands work against ${base}`);
  const health = await fetch(`${base}/api/health`).then((r) => r.json()).catch(() => ({}));
  writeFileSync(out, JSON.stringify({ base, server: health.version ?? health.serverVersion ?? null, at: new Date().toISOString(), total: results.length, ok, excluded: excluded.map((c) => c.name), seedFailed: s.failed, results }, null, 1));
  rmSync(work, { recursive: true, force: true });
}

const WHY = { "404 route": "no route", "405 route": "no route", "404 entity": "404 (nothing to act on)", cli: "refused by the CLI", connection: "connection dropped", timeout: "timed out" };

function table(files) {
  const runs = files.map((f) => ({ f, ...JSON.parse(readFileSync(f, "utf8")) }));
  const groups = [...new Set(runs.flatMap((r) => r.results.map((x) => x.group)))].sort();
  const lines = [`| Group | ${runs.map((r) => r.f.replace(/.*\//, "").replace(/\.json$/, "")).join(" | ")} | Why the failing ones fail (${runs[0].f.replace(/.*\//, "").replace(/\.json$/, "")}) |`, `|---|${runs.map(() => "---|").join("")}---|`];
  for (const g of groups) {
    const cells = runs.map((r) => {
      const rs = r.results.filter((x) => x.group === g);
      return `${rs.filter((x) => x.ok).length}/${rs.length}`;
    });
    const fails = runs[0].results.filter((x) => x.group === g && !x.ok);
    const why = {};
    for (const x of fails) (why[WHY[x.cls] ?? x.cls] ??= []).push(x.name.split(" ").slice(1).join(" ") || x.name);
    lines.push(`| ${g} | ${cells.join(" | ")} | ${Object.entries(why).map(([k, v]) => `${k}: ${v.join(", ")}`).join("; ")} |`);
  }
  lines.push(`| **all** | ${runs.map((r) => `**${r.ok}/${r.total}**`).join(" | ")} | |`);
  console.log(lines.join("\n"));
}

if (args[0] === "--table") {
  table(args.slice(1));
} else if (args[0] === "--list") {
  const { all, excluded, client } = enumerate();
  console.log(JSON.stringify({ all: all.length, excluded: excluded.map((c) => c.name), client: client.map((c) => c.name) }, null, 1));
} else {
  const out = flag("--out") ?? "sweep.json";
  const engine = flag("--ours");
  const server = engine ? await startOurs(engine) : { base: flag("--base"), stop: async () => {} };
  if (!server.base) throw new Error("--base URL or --ours sqlite|postgres");
  for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => server.stop().then(() => process.exit(130)));
  try {
    await sweep(server.base, out);
  } finally {
    await server.stop();
  }
}
