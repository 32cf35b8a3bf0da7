// The upstream CLI's command tree, and how much of it our tests run against us.
//
//   node cli_commands.mjs <the CLI's dist/index.js>                  every command path
//   node cli_commands.mjs <entry> --client                           the client commands
//   node cli_commands.mjs <entry> --coverage <PAPERCLIP_CLI_COVERAGE log> [--json]
//
// (Run it with the Node 24 beside the CLI: node_modules/.bin/node.) A command
// path is the words that name a runnable command (`company branding:update`),
// without its arguments. A *client* command is one that talks to a Paperclip
// server's API: the CLI gives exactly those the shared client options
// (`--api-base`, `--api-key`, `--context`, ...: addCommonClientOptions in its
// commands/client/common.ts), so that option is the test, less the few that
// take the options but never call the server (LOCAL_WITH_CLIENT_OPTIONS).
// Commands without it (onboard, run, doctor, configure, db:backup, service,
// worktree, env-lab, auth bootstrap-ceo, routines disable-all: the local
// instance, its files and database; `connections`: a run's runtime-tool URL,
// not the API) are local.
//
// upstream_batch.mjs imports commandPath from here to name what it ran.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import fs from "node:fs";

/// Take the client options, do not call the server: why, per command.
export const LOCAL_WITH_CLIENT_OPTIONS = {
  "context set": "writes the CLI's local context file",
  "plugin init": "scaffolds a plugin package on disk",
};

/// Loads the CLI's commander program without running a command: its main()
/// parses on import, and that first parse is kept from happening.
export async function loadProgram(entry) {
  const { Command } = createRequire(entry)("commander");
  const parseAsync = Command.prototype.parseAsync;
  let root = null;
  Command.prototype.parseAsync = function () {
    root ??= this;
    return Promise.resolve(this);
  };
  const argv = process.argv;
  process.argv = [process.execPath, entry];
  try {
    await import(pathToFileURL(entry).href);
  } finally {
    process.argv = argv;
    Command.prototype.parseAsync = parseAsync;
  }
  if (!root) throw new Error(`${entry} parsed no commander program on import`);
  return root;
}

/// Every runnable command (one with an action) under `root`, depth first.
export function commands(root) {
  const out = [];
  const walk = (cmd, words) => {
    for (const sub of cmd.commands) {
      const path = [...words, sub.name()];
      if (sub._actionHandler) {
        const longs = sub.options.map((o) => o.long);
        const name = path.join(" ");
        out.push({
          path: name,
          group: path[0],
          client: longs.includes("--api-base") && !(name in LOCAL_WITH_CLIENT_OPTIONS),
        });
      }
      walk(sub, path);
    }
  };
  walk(root, []);
  return out;
}

/// The command `args` names: its subcommand words, down from the root, until
/// a word names none (an argument or an option). Aliases count.
export function commandPath(root, args) {
  const words = [];
  let cmd = root;
  for (const arg of args) {
    const sub = cmd.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (!sub) break;
    words.push(sub.name());
    cmd = sub;
  }
  return words.join(" ");
}

/// One entry per line of a coverage log: `{"command", "ok"}` from the batch,
/// `{"args", "ok"}` from a process per command (named here).
function readLog(file, root) {
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l))
    .map((e) => ({ command: e.command ?? commandPath(root, e.args ?? []), ok: e.ok === true }));
}

function coverage(all, log) {
  const client = all.filter((c) => c.client);
  const ran = new Map();
  for (const { command, ok } of log) ran.set(command, (ran.get(command) ?? false) || ok);
  const isClient = new Set(client.map((c) => c.path));
  const notRun = {};
  for (const c of client) if (!ran.has(c.path)) (notRun[c.group] ??= []).push(c.path);
  return {
    clientCommands: client.length,
    allCommands: all.length,
    commandsRunLogged: log.length,
    clientRun: client.filter((c) => ran.has(c.path)).length,
    clientSucceeded: client.filter((c) => ran.get(c.path) === true).length,
    clientRunNeverSucceeded: client.filter((c) => ran.get(c.path) === false).map((c) => c.path),
    localRun: [...ran.keys()].filter((p) => p && !isClient.has(p)).sort(),
    clientNotRunByGroup: notRun,
  };
}

function printReport(r) {
  console.log(`client commands: ${r.clientCommands} (of ${r.allCommands} runnable)`);
  console.log(`client commands run: ${r.clientRun}; succeeded at least once: ${r.clientSucceeded}`);
  console.log(`command runs logged: ${r.commandsRunLogged}`);
  if (r.clientRunNeverSucceeded.length) {
    console.log(`run, never succeeded (${r.clientRunNeverSucceeded.length}):`);
    for (const p of r.clientRunNeverSucceeded) console.log(`  ${p}`);
  }
  if (r.localRun.length) console.log(`local (non-client) commands run: ${r.localRun.join(", ")}`);
  const groups = Object.entries(r.clientNotRunByGroup).sort((a, b) => b[1].length - a[1].length);
  const missing = groups.reduce((n, [, ps]) => n + ps.length, 0);
  console.log(`client commands never run (${missing}), by group:`);
  for (const [group, paths] of groups) {
    const rest = paths.map((p) => p.split(" ").slice(1).join(" ") || "(itself)");
    console.log(`  ${group} (${paths.length}): ${rest.join(", ")}`);
  }
}

async function main(argv) {
  const [entry, ...flags] = argv;
  if (!entry) throw new Error("usage: cli_commands.mjs <CLI entry> [--client | --coverage <log> [--json]]");
  const root = await loadProgram(entry);
  const all = commands(root);
  for (const name of Object.keys(LOCAL_WITH_CLIENT_OPTIONS)) {
    if (!all.some((c) => c.path === name)) console.error(`note: ${name} is no longer a command`);
  }
  const at = flags.indexOf("--coverage");
  if (at >= 0) {
    const report = coverage(all, readLog(flags[at + 1], root));
    if (flags.includes("--json")) console.log(JSON.stringify(report, null, 2));
    else printReport(report);
  } else {
    const only = flags.includes("--client");
    for (const c of all) if (!only || c.client) console.log(c.path);
  }
  // The CLI's import may leave handles (telemetry, update checks) open.
  process.exit(0);
}

if (process.argv[1] && import.meta.url === pathToFileURL(fs.realpathSync(process.argv[1])).href) {
  await main(process.argv.slice(2));
}
