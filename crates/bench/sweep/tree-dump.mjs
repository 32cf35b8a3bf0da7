// Loaded with `node --import` into the upstream CLI: instead of running a command it
// prints the whole commander tree (paths, arguments, options) as JSON and exits, so the
// sweep enumerates every command in one process rather than a `--help` per group.
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const cli = process.argv[1];
const { Command } = createRequire(cli)("commander");
Command.prototype.parseAsync = async function () {
  const walk = (c, path) => ({
    path,
    args: c.registeredArguments.map((a) => ({ name: a.name(), required: a.required })),
    options: c.options.map((o) => ({ flags: o.flags, long: o.long, mandatory: !!o.mandatory })),
    hasAction: !!c._actionHandler,
    subs: c.commands.map((s) => walk(s, [...path, s.name()])),
  });
  // A file, not stdout: exiting right after a large write to a pipe would cut it.
  writeFileSync(process.env.SWEEP_TREE_OUT, JSON.stringify(walk(this, [])));
  process.exit(0);
};
