#!/usr/bin/env node
// Runs docs/node-redlock.md's example against fenced. Run by test/docs_test.go.
//
//   node docs_page.js --page FILE --redlock 5|4 --addr HOST:PORT --other-addr HOST:PORT
//
// FILE is the page's ```js block, with its address replaced by --addr (and,
// for other library versions, the substitutions test/docs_test.go lists).
// It is run as a function body whose require resolves from this directory's
// node_modules; it must define `client` (its ioredis client) and
// updateOrders(batches, write), which calls write(token, batch) for each batch
// with the fencing token of one acquisition of the lock "orders". Checks,
// through this program's own connections:
//
//   1. two calls with two batches each: the page reads its token with the
//      value redlock stored, the token is the current holder's and the same
//      for both batches (the lock is extended between them: with redlock 5
//      that only works if the page keeps the lock extend returns), strictly
//      larger on the second call, and the lock is released afterwards;
//   2. a paused holder: between the page's acquisition and its token read,
//      the key expires (PEXPIRE 50 ms stands in for a pause of the lock's
//      10 s) and a successor takes it through redlock on --other-addr. The
//      page's FENCE key IFEQ answers null, updateOrders rejects without
//      writing, and the successor's own read is above the paused holder's.
//
// Prints one JSON summary line and exits 0; a failed check prints
// "FAIL: ..." on stderr and exits 1.
"use strict";

const fs = require("fs");
const path = require("path");
const vm = require("vm");

const args = {};
for (let i = 2; i < process.argv.length; i += 2) {
  args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
}
for (const k of ["page", "redlock", "addr", "other-addr"]) {
  if (!args[k]) {
    process.stderr.write(`usage error: --${k} is required\n`);
    process.exit(2);
  }
}

class CheckFailed extends Error {}
let checks = 0;
function check(cond, what, ...detail) {
  checks++;
  if (!cond) {
    throw new CheckFailed(
      what + (detail.length ? ": " + detail.map((d) => JSON.stringify(d)).join(" ") : ""),
    );
  }
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const version = (name) =>
  JSON.parse(fs.readFileSync(path.join(__dirname, "node_modules", name, "package.json"), "utf8"))
    .version;

function loadPage(file) {
  const src = fs.readFileSync(file, "utf8");
  const fn = vm.runInThisContext(
    `(async function (require) {\n${src}\nreturn { client, updateOrders };\n})`,
    { filename: file },
  );
  return fn(require);
}

function connect(addr) {
  const Redis = require("ioredis5").default;
  const i = addr.lastIndexOf(":");
  return new Redis({ host: addr.slice(0, i), port: Number(addr.slice(i + 1)) });
}

async function main() {
  const key = "orders";
  const page = await loadPage(args.page);
  check(typeof page.updateOrders === "function", "the page defines updateOrders(batches, write)");
  const opts = page.client.options || {};
  check(`${opts.host}:${opts.port}` === args.addr, "the page's client is pointed at --addr",
    opts.host, opts.port);
  const mon = connect(args.addr);
  const other = connect(args["other-addr"]);

  // Every FENCE the page sends goes through here: recorded, after the pause
  // when one is set.
  const seen = [];
  let pause = null;
  const send = page.client.call.bind(page.client);
  page.client.call = async (...cmd) => {
    if (String(cmd[0]).toUpperCase() !== "FENCE") return send(...cmd);
    check(cmd.length === 4 && String(cmd[2]).toUpperCase() === "IFEQ",
      "the page reads its token with FENCE key IFEQ value", cmd);
    const p = pause;
    pause = null;
    if (p) await p(cmd[3]);
    const reply = await send(...cmd);
    seen.push({ cmd, reply });
    return reply;
  };

  // 1. two acquisitions
  const tokens = [];
  for (let i = 0; i < 2; i++) {
    const written = [];
    await page.updateOrders(["a", "b"], async (token, batch) => {
      check(typeof token === "number" && token > 0, "write gets an integer token", token);
      const { cmd } = seen[seen.length - 1];
      check(cmd[1] === key, "the page fences the lock's key", cmd[1]);
      check((await mon.get(key)) === cmd[3],
        "the value the page passes to IFEQ is the one redlock stored", cmd[3]);
      check((await mon.call("FENCE", key)) === token, "the token is the current holder's", token);
      written.push([token, batch]);
    });
    check(JSON.stringify(written) === JSON.stringify([[written[0][0], "a"], [written[0][0], "b"]]),
      "both batches written, with one token", written);
    check((await mon.exists(key)) === 0, "the page releases the lock");
    tokens.push(written[0][0]);
  }
  check(tokens[1] > tokens[0], "a later acquisition has a larger token", tokens);

  // 2. a paused holder
  const Redlock = args.redlock === "4" ? require("redlock4") : require("redlock").default;
  const succ = {};
  pause = async (value) => {
    succ.a = await mon.call("FENCE", key, "IFEQ", value);
    check(typeof succ.a === "number" && succ.a > tokens[1], "the holder's token before its pause",
      succ.a);
    await mon.pexpire(key, 50);
    for (let t = 0; t < 250 && (await mon.exists(key)) === 1; t++) await sleep(20);
    check((await mon.exists(key)) === 0, "the lock expired during the pause");
    succ.lock = await new Redlock([other], { retryCount: 0 }).acquire([key], 10000);
    succ.b = await other.call("FENCE", key, "IFEQ", succ.lock.value);
  };
  const written = [];
  let raised = null;
  try {
    await page.updateOrders(["a"], async (token) => written.push(token));
  } catch (e) {
    raised = e;
  }
  check(pause === null && succ.a !== undefined, "the page read its token after the pause");
  check(seen[seen.length - 1].reply === null, "the paused holder's FENCE key IFEQ answers null",
    seen[seen.length - 1].reply);
  check(raised !== null, "updateOrders rejects when the lock was lost");
  check(written.length === 0, "the paused holder does not write", written);
  check(typeof succ.b === "number" && succ.b > succ.a,
    "the successor's own token is above the paused holder's", succ.a, succ.b);
  check((await other.call("FENCE", key, "IFEQ", succ.lock.value)) === succ.b,
    "the successor still holds the lock after the paused holder's run");
  await (args.redlock === "4" ? succ.lock.unlock() : succ.lock.release());
  check((await mon.exists(key)) === 0, "the successor releases");
  process.stderr.write(`paused holder: ${raised}\n`);

  const proto = page.client.condition && page.client.condition.protocol;
  for (const c of [page.client, mon, other]) await c.quit();
  return {
    mode: "docs",
    checks,
    fence: [...tokens, succ.a, succ.b],
    lib:
      `ioredis@${page.client instanceof require("ioredis5") ? version("ioredis5") : version("ioredis")}` +
      ` (resp${proto || 2}) redlock@${version(args.redlock === "4" ? "redlock4" : "redlock")}`,
  };
}

main().then(
  (out) => {
    process.stdout.write(JSON.stringify(out) + "\n");
    process.exit(0);
  },
  (e) => {
    process.stderr.write(`FAIL: ${e instanceof CheckFailed ? e.message : e.stack || e}\n`);
    process.exit(1);
  },
);
