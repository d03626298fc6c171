#!/usr/bin/env python3
"""redis-py's transactions (unmodified, as installed) against one endpoint.

Run by test/compat_python_test.go. Usage:

  redis_py_tx.py basic  --addr HOST:PORT [--other HOST:PORT] [--protocol 2|3] --prefix P
  redis_py_tx.py worker --addr HOST:PORT [--protocol 2|3] --prefix P --iterations N

basic runs pipeline() (transactional by default: MULTI ... EXEC) and checks
its replies, a runtime error inside it (no rollback), a queueing error
(EXECABORT), and WATCH: a key changed by another client (on --other, else
the same endpoint) makes execute() raise WatchError and run nothing.
worker increments <prefix>:counter with redis-py's check-and-set recipe
(watch, get, multi, set, execute; retry on WatchError) N times and reports
how many transactions succeeded and how many were retried. The last line of
stdout is one JSON object; a failed check prints "FAIL: ..." on stderr and
exits 1; exit code 3 means the installed redis-py cannot do what was asked.
"""

import argparse
import inspect
import json
import sys

try:
    import redis
    from redis.exceptions import ResponseError, WatchError
except ImportError as e:
    print("UNSUPPORTED: cannot import redis: %s" % e, file=sys.stderr)
    sys.exit(3)


class CheckFailed(Exception):
    pass


checks = 0


def check(cond, what, *detail):
    global checks
    checks += 1
    if not cond:
        raise CheckFailed(what + (": " + " ".join(repr(d) for d in detail) if detail else ""))


def connect(addr, protocol):
    host, port = addr.rsplit(":", 1)
    kw = dict(host=host, port=int(port), socket_timeout=15, socket_connect_timeout=5, decode_responses=True)
    if "protocol" in inspect.signature(redis.Redis.__init__).parameters:
        kw["protocol"] = protocol
    elif protocol != 2:
        print("UNSUPPORTED: redis-py %s has no protocol=%d" % (redis.__version__, protocol), file=sys.stderr)
        sys.exit(3)
    r = redis.Redis(**kw)
    check(r.ping() is True, "PING")
    return r


def basic(args):
    r = connect(args.addr, args.protocol)
    other = connect(args.other or args.addr, args.protocol)
    k, l = args.prefix + ":k", args.prefix + ":l"
    r.delete(k, l)

    p = r.pipeline()  # transaction=True
    p.set(k, "1").incr(k).incrby(k, 5).get(k)
    got = p.execute()
    check(got == [True, 2, 7, "7"], "pipeline() replies", got)

    # A runtime error is its own element; the others ran.
    p = r.pipeline()
    p.set(k, "v").lpush(k, "x").rpush(l, "y")
    got = p.execute(raise_on_error=False)
    check(got[0] is True and isinstance(got[1], ResponseError) and got[2] == 1, "runtime error inside", got)
    check("WRONGTYPE" in str(got[1]), "WRONGTYPE text", str(got[1]))
    check(r.llen(l) == 1, "no rollback")

    # An error while queueing aborts the whole transaction.
    p = r.pipeline()
    p.set(k, "before")
    p.execute_command("NOPE", "x")
    p.set(l + "2", "z")
    try:
        p.execute()
        check(False, "EXEC after a queueing error did not fail")
    except ResponseError as e:
        check("EXECABORT" in str(e) or "unknown command" in str(e), "queueing error", str(e))
    check(r.get(k) == "v" and r.exists(l + "2") == 0, "nothing of an aborted transaction ran")

    # WATCH: unchanged, then changed by another client.
    with r.pipeline() as p:
        p.watch(k)
        v = p.get(k)
        p.multi()
        p.set(k, v + "!")
        check(p.execute() == [True], "unchanged watch")
    with r.pipeline() as p:
        p.watch(k)
        other.set(k, "other")
        p.multi()
        p.set(k, "mine")
        try:
            p.execute()
            check(False, "a changed watched key did not fail EXEC")
        except WatchError:
            check(True, "WatchError")
    check(r.get(k) == "other", "the failed transaction wrote nothing", r.get(k))
    return {"mode": "basic", "checks": checks, "redis_py": redis.__version__}


def worker(args):
    r = connect(args.addr, args.protocol)
    key = args.prefix + ":counter"
    ok = retried = 0
    for _ in range(args.iterations):
        while True:
            with r.pipeline() as p:
                try:
                    p.watch(key)
                    n = int(p.get(key) or 0)
                    p.multi()
                    p.set(key, n + 1)
                    p.execute()
                    ok += 1
                    break
                except WatchError:
                    retried += 1
    check(ok == args.iterations, "every increment committed", ok)
    return {"mode": "worker", "checks": checks, "acquisitions": ok, "contended": retried,
            "redis_py": redis.__version__}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["basic", "worker"])
    p.add_argument("--addr", required=True)
    p.add_argument("--other", default="")
    p.add_argument("--protocol", type=int, default=2, choices=[2, 3])
    p.add_argument("--prefix", default="compat-py-tx")
    p.add_argument("--iterations", type=int, default=20)
    args = p.parse_args()
    try:
        out = basic(args) if args.mode == "basic" else worker(args)
    except CheckFailed as e:
        print("FAIL: %s" % e, file=sys.stderr)
        sys.exit(1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
