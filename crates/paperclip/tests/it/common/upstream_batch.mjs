// Runs many `paperclipai` commands in one Node process: `node upstream_batch.mjs
// <the CLI's dist/index.js>`, then one JSON line `{"args": [...]}` per command on
// stdin, one line `{"code", "stdout", "stderr"}` back per command on stdout.
//
// Why: a process per command is about 0.9 s of CPU, nearly all Node starting
// and resolving the CLI's dependencies; the test suite runs hundreds. Here the
// CLI is loaded once and its commander program parsed again per command
// (commander restores its state between parses). Each command's output is
// told apart by an AsyncLocalStorage context, so a late write of a finished
// command is dropped instead of landing in the next one's output; its
// `process.exit` ends the command (first call wins), not the process.
// common/upstream.rs falls back to a process per command with
// PAPERCLIP_UPSTREAM_CLI_PROCESSES=1.
//
// With PAPERCLIP_CLI_COVERAGE=<file>, each command appends a line
// `{"command": "issue list", "ok": true}` (its command path, no arguments) to
// that file; `cli_commands.mjs --coverage <file>` counts them.
import { createRequire } from "node:module";
import fs from "node:fs";
import { AsyncLocalStorage } from "node:async_hooks";
import { pathToFileURL } from "node:url";
import readline from "node:readline";
import { commandPath } from "./cli_commands.mjs";

const entry = process.argv[2];
const require = createRequire(entry);
const { Command } = require("commander");
const als = new AsyncLocalStorage();
const reply = process.stdout.write.bind(process.stdout);
const logError = process.stderr.write.bind(process.stderr);

// The CLI's root program, taken from its first parse (the import runs it).
let root = null;
let firstParse = null;
const parseAsync = Command.prototype.parseAsync;
Command.prototype.parseAsync = function (...args) {
  const parsing = parseAsync.apply(this, args);
  if (!root) {
    root = this;
    firstParse = parsing;
  }
  return parsing;
};

// The command being run, for what escapes its async context.
let current = null;
const runOf = () => als.getStore() ?? current;

class Exit extends Error {}
process.exit = (code) => {
  const run = runOf();
  if (run && !run.done) run.finish(code ?? process.exitCode ?? 0);
  throw new Exit("exit");
};
const failed = (e) => {
  if (e instanceof Exit) return;
  const run = runOf();
  if (run && !run.done) {
    run.err.push(`${e?.stack ?? e}\n`);
    run.finish(1);
  } else {
    logError(`upstream_batch: ${e?.stack ?? e}\n`);
  }
};
process.on("unhandledRejection", failed);
process.on("uncaughtException", failed);

for (const [stream, key] of [[process.stdout, "out"], [process.stderr, "err"]]) {
  stream.write = (chunk, enc, cb) => {
    const run = runOf();
    if (!run) return logError(chunk, enc, cb);
    if (!run.done) run[key].push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString());
    if (typeof enc === "function") enc();
    else if (typeof cb === "function") cb();
    return true;
  };
}

const baseEnv = { ...process.env };
const coverageLog = process.env.PAPERCLIP_CLI_COVERAGE;

// One short write per line: O_APPEND keeps the lines of concurrent tests whole.
function logCoverage(args, code) {
  if (!coverageLog) return;
  // Without the program (its import failed) only the words before the first
  // option are kept, for cli_commands.mjs to name: never an option's value.
  const firstOption = args.findIndex((a) => a.startsWith("-"));
  const line = root
    ? { command: commandPath(root, args), ok: code === 0 }
    : { args: firstOption < 0 ? args : args.slice(0, firstOption), ok: code === 0 };
  try {
    fs.appendFileSync(coverageLog, `${JSON.stringify(line)}\n`);
  } catch (e) {
    logError(`upstream_batch: coverage log ${coverageLog}: ${e?.message ?? e}\n`);
  }
}

function runOne(args) {
  return new Promise((resolve) => {
    const run = { out: [], err: [], done: false };
    run.finish = (code) => {
      run.done = true;
      // Let the command's last writes of this turn land before answering.
      setImmediate(() => resolve({ code, stdout: run.out.join(""), stderr: run.err.join("") }));
    };
    current = run;
    for (const k of Object.keys(process.env)) if (!(k in baseEnv)) delete process.env[k];
    Object.assign(process.env, baseEnv);
    process.exitCode = undefined;
    process.argv = [process.execPath, entry, ...args];
    als.run(run, async () => {
      let parsing;
      if (!root) {
        await import(pathToFileURL(entry).href);
        parsing = firstParse;
      } else {
        parsing = root.parseAsync(process.argv);
      }
      // The CLI's own main() awaits the first parse and prints its error;
      // later parses are ours, so their error is printed here as main would.
      const mainAwaits = parsing === firstParse;
      try {
        await parsing;
      } catch (e) {
        if (!mainAwaits && !(e instanceof Exit) && !run.done) {
          run.err.push(`${e instanceof Error ? e.message : String(e)}\n`);
        }
        setTimeout(() => run.done || run.finish(1), 0);
        return;
      }
      setTimeout(() => run.done || run.finish(process.exitCode ?? 0), 0);
    });
  });
}

for await (const line of readline.createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { args } = JSON.parse(line);
  const result = await runOne(args);
  current = null;
  logCoverage(args, result.code);
  reply(`${JSON.stringify(result)}\n`);
}
