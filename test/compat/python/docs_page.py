#!/usr/bin/env python3
"""Runs a Python docs page's example against fenced. Run by test/docs_test.go.

  docs_page.py --page FILE --lib redis-py|python-redis-lock --key KEY
               --addr HOST:PORT --other-addr HOST:PORT

FILE is the page's ```python block, with its address replaced by --addr
(test/docs_test.go does that). The page must define update_orders(write),
which calls write(token) with the fencing token of one acquisition of the lock
"orders" (stored under KEY), and exactly one redis.Redis client. This program
checks, through its own connections:

  1. two calls: the page reads its token with the value the library stored
     (the key holds the value it passes to FENCE key IFEQ), the token is the
     current holder's, strictly larger on the second call, and the lock is
     released afterwards;
  2. a paused holder: between the page's acquisition and its token read, the
     key expires (PEXPIRE 50 ms stands in for a pause of the lock's 10 s) and
     a successor takes it through the library on --other-addr. The page's
     FENCE key IFEQ answers None, update_orders raises without writing, and
     the successor's own read answers a token above the paused holder's.

For python-redis-lock, the real redis_lock is used if it imports, else the
stand-in in standin/ (see its docstring for what that covers). Prints one JSON
summary line and exits 0; a failed check prints "FAIL: ..." and exits 1.
"""

import argparse
import json
import os
import runpy
import sys
import time

import redis

checks = 0


class CheckFailed(Exception):
    pass


def check(cond, what, *detail):
    global checks
    checks += 1
    if not cond:
        raise CheckFailed(what + (": " + " ".join(repr(d) for d in detail) if detail else ""))


def connect(addr):
    host, port = addr.rsplit(":", 1)
    r = redis.Redis(host=host, port=int(port), socket_timeout=15)
    check(r.ping() is True, "PING " + addr)
    return r


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--page", required=True)
    p.add_argument("--lib", required=True, choices=["redis-py", "python-redis-lock"])
    p.add_argument("--key", required=True)
    p.add_argument("--addr", required=True)
    p.add_argument("--other-addr", required=True)
    args = p.parse_args()
    key = args.key

    lib = "redis-py " + redis.__version__
    if args.lib == "python-redis-lock":
        try:
            import redis_lock  # noqa: F401 (the real library, if installed)
        except ImportError:
            sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "standin"))
            import redis_lock
        lib = "python-redis-lock " + redis_lock.__version__ + " on " + lib

    page = runpy.run_path(args.page)
    update_orders = page.get("update_orders")
    check(callable(update_orders), "the page defines update_orders(write)")
    clients = [v for v in page.values() if isinstance(v, redis.Redis)]
    check(len(clients) == 1, "the page defines one redis.Redis client", clients)
    page_r = clients[0]
    kw = page_r.connection_pool.connection_kwargs
    check("%s:%s" % (kw.get("host"), kw.get("port")) == args.addr,
          "the page's client is pointed at --addr", kw.get("host"), kw.get("port"))

    mon = connect(args.addr)  # this program's own view
    other = connect(args.other_addr)

    # Every FENCE the page sends goes through here: its arguments are
    # recorded, and pause (when set) runs first.
    seen = []
    state = {"pause": None}
    send = page_r.execute_command

    def spy(*cmd, **kw):
        if cmd and str(cmd[0]).upper() == "FENCE":
            check(len(cmd) == 4 and str(cmd[2]).upper() == "IFEQ",
                  "the page reads its token with FENCE key IFEQ value", cmd)
            pause, state["pause"] = state["pause"], None
            if pause:
                pause(cmd[3])
            reply = send(*cmd, **kw)
            seen.append((cmd, reply))
            return reply
        return send(*cmd, **kw)

    page_r.execute_command = spy

    # 1. two acquisitions
    tokens = []
    for i in range(2):
        written = []

        def write(token):
            check(isinstance(token, int) and token > 0, "write gets an integer token", token)
            cmd, _ = seen[-1]
            check(cmd[1] == key, "the page fences the library's key", cmd[1], key)
            passed = cmd[3].encode() if isinstance(cmd[3], str) else cmd[3]
            check(mon.get(key) == passed,
                  "the value the page passes to IFEQ is the one the library stored", passed)
            check(mon.execute_command("FENCE", key) == token, "the token is the current holder's", token)
            written.append(token)

        update_orders(write)
        check(len(written) >= 1 and all(t == written[0] for t in written),
              "write called with one token per acquisition", written)
        check(mon.exists(key) == 0, "the page releases the lock")
        tokens.append(written[0])
    check(tokens[1] > tokens[0], "a later acquisition has a larger token", tokens)

    # 2. a paused holder
    succ = {}

    def pause(value):
        a = mon.execute_command("FENCE", key, "IFEQ", value)
        check(isinstance(a, int) and a > tokens[1], "the holder's token before its pause", a)
        succ["a"] = a
        mon.pexpire(key, 50)
        deadline = time.monotonic() + 5
        while mon.exists(key) and time.monotonic() < deadline:
            time.sleep(0.02)
        check(mon.exists(key) == 0, "the lock expired during the pause")
        if args.lib == "redis-py":
            b = other.lock("orders", timeout=10)
            check(b.acquire(blocking=False) is True, "the successor acquires")
            succ["value"], succ["release"] = b.local.token, b.release
        else:
            b = redis_lock.Lock(other, "orders", expire=10)
            check(b.acquire(blocking=False) is True, "the successor acquires")
            succ["value"], succ["release"] = b.id, b.release
        succ["b"] = other.execute_command("FENCE", key, "IFEQ", succ["value"])

    state["pause"] = pause
    written = []
    try:
        update_orders(written.append)
        raised = None
    except Exception as e:  # the page's "lock lost"
        raised = e
    check(state["pause"] is None and "a" in succ, "the page read its token after the pause")
    check(seen[-1][1] is None, "the paused holder's FENCE key IFEQ answers None", seen[-1][1])
    check(raised is not None, "update_orders raises when the lock was lost")
    check(written == [], "the paused holder does not write", written)
    check(isinstance(succ["b"], int) and succ["b"] > succ["a"],
          "the successor's own token is above the paused holder's", succ)
    check(other.execute_command("FENCE", key, "IFEQ", succ["value"]) == succ["b"],
          "the successor still holds the lock after the paused holder's run")
    succ["release"]()
    check(mon.exists(key) == 0, "the successor releases")

    print("paused holder: %s" % raised, file=sys.stderr)
    return {"mode": "docs", "checks": checks, "lib": lib,
            "fence": tokens + [succ["a"], succ["b"]]}


if __name__ == "__main__":
    try:
        out = main()
    except CheckFailed as e:
        print("FAIL: %s" % e, file=sys.stderr)
        sys.exit(1)
    print(json.dumps(out))
