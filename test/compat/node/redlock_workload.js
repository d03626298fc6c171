#!/usr/bin/env node
// Unmodified ioredis + redlock (node-redlock, as installed from
// package-lock.json) against one endpoint. Run by test/compat_node_test.go.
//
//   node redlock_workload.js basic      --addr HOST:PORT [options]
//   node redlock_workload.js contention --addr HOST:PORT[,HOST:PORT...] [options]
//
// options:
//   --client ioredis|ioredis5  ioredis 6 (RESP3 by default) or ioredis 5 (RESP2 only)
//   --protocol 2|3             the protocol asked of ioredis 6
//   --redlock 5|4              redlock 5.0.0-beta.2 (acquire/extend/release/using)
//                              or 4.2.0 (npm latest: lock/extend/unlock)
//   --fence                    also read FENCE key (fenced only) and check it
//   --prefix P                 key prefix
//   --workers N --iterations M contention: N Redlock instances, each with its
//                              own connection (to the addresses round-robin),
//                              each taking P:lock M times and incrementing
//                              P:counter with GET then SET inside it
//   --announce KEY             contention: a worker whose first try finds the
//                              lock held INCRs KEY before it waits (the Go
//                              test holds the lock until every worker has)
//   --tls-ca FILE              connect over TLS, verifying the server against
//                              the CA (and its address against the certificate)
//   --tls-cert FILE --tls-key FILE  with --tls-ca: present this client certificate
//   --user U --password P      authenticate as this ACL user
//
// Prints one JSON object as the last line of stdout and exits 0; a failed
// check prints "FAIL: ..." on stderr and exits 1; exit code 3 means the
// combination is not supported by the installed libraries.
"use strict";

const args = parseArgs(process.argv.slice(2));
const Redis =
  args.client === "ioredis5" ? require("ioredis5").default : require("ioredis").default;
// (read from disk: redlock 5's package.json "exports" hides package.json)
const pkgVersion = (name) =>
  JSON.parse(
    require("fs").readFileSync(
      require("path").join(__dirname, "node_modules", name, "package.json"),
      "utf8",
    ),
  ).version;
const clientVersion = pkgVersion(args.client);
const redlockVersion = pkgVersion(args.redlock === "5" ? "redlock" : "redlock4");
const Redlock5 = require("redlock");
const Redlock4 = require("redlock4");

function parseArgs(argv) {
  const out = {
    mode: argv[0],
    addr: "",
    client: "ioredis",
    protocol: 3,
    redlock: "5",
    fence: false,
    prefix: "compat-node",
    workers: 3,
    iterations: 10,
    announce: "",
    tlsCA: "",
    tlsCert: "",
    tlsKey: "",
    user: "",
    password: "",
  };
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === "--addr") out.addr = val();
    else if (a === "--client") out.client = val();
    else if (a === "--protocol") out.protocol = Number(val());
    else if (a === "--redlock") out.redlock = val();
    else if (a === "--fence") out.fence = true;
    else if (a === "--prefix") out.prefix = val();
    else if (a === "--workers") out.workers = Number(val());
    else if (a === "--iterations") out.iterations = Number(val());
    else if (a === "--announce") out.announce = val();
    else if (a === "--tls-ca") out.tlsCA = val();
    else if (a === "--tls-cert") out.tlsCert = val();
    else if (a === "--tls-key") out.tlsKey = val();
    else if (a === "--user") out.user = val();
    else if (a === "--password") out.password = val();
    else usage(`unknown argument ${a}`);
  }
  if (!["basic", "contention"].includes(out.mode)) usage(`unknown mode ${out.mode}`);
  if (!out.addr) usage("--addr is required");
  if (!["ioredis", "ioredis5"].includes(out.client)) usage(`unknown client ${out.client}`);
  if (!["4", "5"].includes(out.redlock)) usage(`unknown redlock ${out.redlock}`);
  if (![2, 3].includes(out.protocol)) usage(`unknown protocol ${out.protocol}`);
  if ((out.tlsCert || out.tlsKey) && !(out.tlsCA && out.tlsCert && out.tlsKey)) {
    usage("--tls-cert and --tls-key go together, with --tls-ca");
  }
  return out;
}

function usage(msg) {
  process.stderr.write(`usage error: ${msg}\n`);
  process.exit(2);
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

// Errors a connection or a Redlock instance reported on its own; any of them
// fails the run (a refused script, an unknown command, a dropped connection).
const unexpected = [];

async function connect(addr) {
  const i = addr.lastIndexOf(":");
  const opts = {
    host: addr.slice(0, i),
    port: Number(addr.slice(i + 1)),
    lazyConnect: true,
    maxRetriesPerRequest: 2,
    connectTimeout: 5000,
    retryStrategy: (times) => (times > 3 ? null : 200),
  };
  if (args.tlsCA) {
    const fs = require("fs");
    opts.tls = { ca: fs.readFileSync(args.tlsCA) };
    if (args.tlsCert) {
      opts.tls.cert = fs.readFileSync(args.tlsCert);
      opts.tls.key = fs.readFileSync(args.tlsKey);
    }
  }
  if (args.user) {
    opts.username = args.user;
    opts.password = args.password;
  }
  if (args.client === "ioredis") {
    opts.protocol = args.protocol;
  } else if (args.protocol !== 2) {
    process.stderr.write(`UNSUPPORTED: ioredis ${clientVersion} speaks RESP2 only\n`);
    process.exit(3);
  }
  const c = new Redis(opts);
  c.on("error", (e) => unexpected.push(`connection ${addr}: ${e.message}`));
  await c.connect();
  check((await c.ping()) === "PONG", "PING");
  const proto = c.condition && c.condition.protocol;
  if (args.client === "ioredis") {
    // ioredis 6 falls back to RESP2 when HELLO 3 fails: that would not be a
    // RESP3 run at all.
    check(proto === args.protocol, `negotiated protocol ${args.protocol}`, proto);
  }
  return c;
}

// tlsVersion is the TLS version a connection negotiated ("" without TLS).
function tlsVersion(c) {
  return c.stream && typeof c.stream.getProtocol === "function" ? c.stream.getProtocol() || "" : "";
}

// lockAPI hides the naming differences of redlock 5 (acquire/extend/release,
// ExecutionError) and 4 (lock/extend/unlock, LockError).
function newRedlock(client, settings) {
  if (args.redlock === "5") {
    const rl = new Redlock5.default([client], settings);
    rl.on("error", (e) => {
      if (!(e instanceof Redlock5.ResourceLockedError)) unexpected.push(`redlock: ${e.message}`);
    });
    return {
      acquire: (keys, ms) => rl.acquire(keys, ms),
      extend: (lock, ms) => lock.extend(ms),
      release: (lock) => rl.release(lock, { retryCount: 0 }),
      isLockError: (e) => e instanceof Redlock5.ExecutionError,
      rl,
    };
  }
  const rl = new Redlock4([client], settings);
  rl.on("clientError", (e) => unexpected.push(`redlock: ${e.message}`));
  return {
    acquire: (keys, ms) => rl.lock(keys.length === 1 ? keys[0] : keys, ms),
    extend: (lock, ms) => lock.extend(ms),
    release: (lock) => lock.unlock(),
    isLockError: (e) => e instanceof Redlock4.LockError,
    rl,
  };
}

async function expectLockError(api, promise, what) {
  try {
    await promise;
  } catch (e) {
    check(api.isLockError(e), `${what} fails with the library's lock error`, String(e));
    return;
  }
  check(false, `${what} succeeded`);
}

async function fence(c, key) {
  const v = await c.call("FENCE", key);
  check(typeof v === "number" && v > 0, `FENCE ${key} answers a positive integer`, v);
  return v;
}

async function basic() {
  const c = await connect(args.addr);
  const c2 = await connect(args.addr);
  const api = newRedlock(c, { retryCount: 0 });
  const api2 = newRedlock(c2, { retryCount: 0 });
  const key = `${args.prefix}:basic`;
  const tokens = [];

  // acquire
  let l1 = await api.acquire([key], 2000);
  check((await c.get(key)) === l1.value, "GET key is the lock value");
  let ttl = await c.pttl(key);
  check(ttl > 0 && ttl <= 2000, "PTTL after acquire(2000)", ttl);
  if (args.fence) tokens.push(await fence(c, key));

  // a second client cannot take it
  await expectLockError(api2, api2.acquire([key], 2000), "acquire of a held lock");
  check((await c.get(key)) === l1.value, "the holder's value survives a failed acquire");

  // extend: the key is SET again with PX, same value, same fencing token
  l1 = await api.extend(l1, 5000);
  ttl = await c.pttl(key);
  check(ttl > 2000 && ttl <= 5000, "PTTL after extend(5000)", ttl);
  check((await c.get(key)) === l1.value, "GET key after extend");
  if (args.fence) check((await fence(c, key)) === tokens[0], "FENCE unchanged by extend", tokens);

  // release; a second release fails
  await api.release(l1);
  check((await c.exists(key)) === 0, "key gone after release");
  await expectLockError(api, api.release(l1), "second release");

  // acquire again: a new creation, so a strictly larger fencing token
  const l2 = await api2.acquire([key], 2000);
  if (args.fence) {
    tokens.push(await fence(c2, key));
    check(tokens[1] > tokens[0], "FENCE increases across acquisitions", tokens);
  }
  await api2.release(l2);

  // several resources at once: all or nothing
  const [ka, kb, kc] = ["a", "b", "c"].map((s) => `${args.prefix}:multi-${s}`);
  const m = await api.acquire([ka, kb], 2000);
  check(
    (await c.get(ka)) === m.value && (await c.get(kb)) === m.value,
    "both resources hold the value",
  );
  await expectLockError(api2, api2.acquire([kb, kc], 2000), "acquire overlapping a held resource");
  check((await c.exists(kc)) === 0, "a failed multi-resource acquire sets none of its keys");
  await api.release(m);
  check((await c.exists(ka, kb)) === 0, "multi-resource release removes every key");

  // expiry on the server: the old holder can neither extend nor release the
  // new holder's lock
  const short = await api.acquire([key], 300);
  if (args.fence) {
    tokens.push(await fence(c, key));
    check(tokens[2] > tokens[1], "FENCE increases across acquisitions", tokens);
  }
  await sleep(600);
  check((await c.exists(key)) === 0, "key gone after its PX");
  const l3 = await api2.acquire([key], 5000);
  if (args.fence) {
    tokens.push(await fence(c2, key));
    check(tokens[3] > tokens[2], "FENCE increases across acquisitions", tokens);
    // docs/node-redlock.md's safe read: the expired (paused) holder's
    // lock.value gets null, never the successor's token; the successor's
    // gets its own.
    const stale = await c.call("FENCE", key, "IFEQ", short.value);
    check(stale === null, "the expired holder's FENCE IFEQ lock.value", stale);
    const own = await c2.call("FENCE", key, "IFEQ", l3.value);
    check(own === tokens[3], "the new holder's FENCE IFEQ lock.value", own);
  }
  // (redlock checks the expiry client-side first; pretend it is still valid
  // so that the server's script is what refuses)
  short.expiration = Date.now() + 10000;
  await expectLockError(api, api.extend(short, 1000), "extend by the expired holder");
  short.expiration = Date.now() + 10000;
  await expectLockError(api, api.release(short), "release by the expired holder");
  check((await c.get(key)) === l3.value, "the new holder keeps the lock");
  await api2.release(l3);

  // automatic extension (redlock 5 only): the routine outlives the duration
  if (args.redlock === "5") {
    const u = newRedlock(c, { retryCount: 0, automaticExtensionThreshold: 400 });
    let during = null;
    await u.rl.using([key], 900, async (signal) => {
      await sleep(1600);
      check(!signal.aborted, "using(): not aborted", signal.error && String(signal.error));
      during = await c.pttl(key);
    });
    check(during > 0, "using(): the key still has a TTL after 1.6 s of a 900 ms lock", during);
    check((await c.exists(key)) === 0, "using(): released at the end");
  }

  check(unexpected.length === 0, "no connection or redlock errors", unexpected);
  const tls = tlsVersion(c);
  await api.rl.quit();
  await api2.rl.quit();
  return {
    mode: "basic",
    checks,
    tls,
    fence: tokens,
    client: `ioredis@${clientVersion}`,
    redlock: `redlock@${redlockVersion}`,
    protocol: args.client === "ioredis" ? args.protocol : 2,
  };
}

async function contention() {
  const addrs = args.addr.split(",");
  const lockKey = `${args.prefix}:lock`;
  const counter = `${args.prefix}:counter`;
  const workers = [];
  for (let w = 0; w < args.workers; w++) {
    const c = await connect(addrs[w % addrs.length]);
    const api = newRedlock(c, { retryCount: -1, retryDelay: 10, retryJitter: 8 });
    const api0 = newRedlock(c, { retryCount: 0 });
    workers.push({ c, api, api0 });
  }
  let contended = 0;
  const records = [];
  await Promise.all(
    workers.map(async ({ c, api, api0 }) => {
      for (let i = 0; i < args.iterations; i++) {
        let lock;
        try {
          lock = await api0.acquire([lockKey], 10000);
        } catch (e) {
          check(api0.isLockError(e), "a refused acquire fails with the lock error", String(e));
          contended++;
          if (i === 0 && args.announce) await c.incr(args.announce);
          lock = await api.acquire([lockKey], 10000);
        }
        const token = args.fence ? await fence(c, lockKey) : null;
        const v = await c.get(counter);
        const n = v === null ? 1 : Number(v) + 1;
        await sleep(1 + Math.floor(Math.random() * 3));
        await c.set(counter, String(n));
        records.push([n, token]);
        await api.release(lock); // fails if the lock was lost meanwhile
      }
    }),
  );
  // A refused acquire (redlock 5) is reported as a ResourceLockedError event,
  // which the handler ignores; anything else is unexpected.
  check(unexpected.length === 0, "no connection or redlock errors", unexpected);
  const tls = tlsVersion(workers[0].c);
  for (const { api } of workers) await api.rl.quit();
  return {
    mode: "contention",
    tls,
    acquisitions: records.length,
    contended,
    records,
    checks,
    client: `ioredis@${clientVersion}`,
    redlock: `redlock@${redlockVersion}`,
  };
}

(args.mode === "basic" ? basic() : contention()).then(
  (out) => {
    process.stdout.write(JSON.stringify(out) + "\n");
    process.exit(0);
  },
  (e) => {
    process.stderr.write(`FAIL: ${e instanceof CheckFailed ? e.message : e.stack || e}\n`);
    if (unexpected.length) process.stderr.write(`errors seen: ${JSON.stringify(unexpected)}\n`);
    process.exit(1);
  },
);
