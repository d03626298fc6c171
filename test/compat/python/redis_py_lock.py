#!/usr/bin/env python3
"""redis-py's own redis.lock.Lock (unmodified, as installed) against one endpoint.

Run by test/compat_python_test.go. Usage:

  redis_py_lock.py basic  --addr HOST:PORT [--protocol 2|3] [--fence] --prefix P [TLS]
  redis_py_lock.py worker --addr HOST:PORT [--protocol 2|3] [--fence] --prefix P [TLS]
                          --id N --iterations N [--announce KEY]

TLS is --tls-ca FILE [--tls-cert FILE --tls-key FILE]: connect with
ssl=True, verifying the server against the CA (and its address against the
certificate), presenting the client certificate if given; the summary then
reports the negotiated version as "tls". --user U --password P authenticate
as that ACL user.

basic runs every Lock operation once and checks the result of each; worker
takes the lock <prefix>:lock N times and, inside it, increments the plain key
<prefix>:counter with GET then SET (never INCR), so that two holders at once
lose an update. With --announce, a worker whose first try finds the lock
held INCRs KEY before it waits: the Go test holds the lock until every
worker has, so that they contend for certain. Every mode prints one JSON
object as its last line of stdout and exits 0; a failed check prints
"FAIL: ..." on stderr and exits 1. Exit code 3 means the installed redis-py
cannot do what was asked (RESP3 needs redis-py >= 5).
"""

import argparse
import inspect
import json
import random
import sys
import threading
import time

try:
    import redis
    from redis.exceptions import LockError, LockNotOwnedError
except ImportError as e:  # the Go test checks this before running us
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


def connect(args):
    host, port = args.addr.rsplit(":", 1)
    kw = dict(host=host, port=int(port), socket_timeout=15, socket_connect_timeout=5)
    has_protocol = "protocol" in inspect.signature(redis.Redis.__init__).parameters
    if has_protocol:
        kw["protocol"] = args.protocol  # redis-py >= 8 would otherwise default to 3
    elif args.protocol != 2:
        print("UNSUPPORTED: redis-py %s has no protocol=%d (RESP3 needs redis-py >= 5)"
              % (redis.__version__, args.protocol), file=sys.stderr)
        sys.exit(3)
    if args.tls_ca:
        kw.update(ssl=True, ssl_ca_certs=args.tls_ca, ssl_cert_reqs="required")
        if "ssl_check_hostname" in inspect.signature(redis.Redis.__init__).parameters:
            kw["ssl_check_hostname"] = True
        if args.tls_cert:
            kw.update(ssl_certfile=args.tls_cert, ssl_keyfile=args.tls_key)
    if args.user:
        kw.update(username=args.user, password=args.password)
    r = redis.Redis(**kw)
    check(r.ping() is True, "PING")
    return r


def tls_version(r):
    """The TLS version of one of r's connections ("" without TLS)."""
    try:
        conn = r.connection_pool.get_connection()
    except TypeError:  # redis-py < 5.3 needs a command name
        conn = r.connection_pool.get_connection("PING")
    try:
        sock = conn._sock
        return sock.version() if hasattr(sock, "version") else ""
    finally:
        r.connection_pool.release(conn)


def fence(r, key):
    """FENCE key: the log index at which the key was created (fenced only)."""
    v = r.execute_command("FENCE", key)
    check(isinstance(v, int) and v > 0, "FENCE %s answers a positive integer" % key, v)
    return v


def pttl(r, key):
    return r.pttl(key)


def basic(args):
    r = connect(args)
    other = connect(args)  # a second client, as another process would have
    name = args.prefix + ":basic"
    tokens = []

    # acquire, non-blocking, with a TTL: SET name token NX PX 2000
    a = r.lock(name, timeout=2, sleep=0.05)
    check(a.acquire(blocking=False) is True, "acquire a free lock")
    check(a.locked() and a.owned(), "locked() and owned() after acquire")
    ttl = pttl(r, name)
    check(0 < ttl <= 2000, "PTTL after acquire with timeout=2", ttl)
    if args.fence:
        tokens.append(fence(r, name))

    # another client: non-blocking and blocking-with-timeout acquisitions fail
    b = other.lock(name, timeout=2, sleep=0.05)
    check(b.acquire(blocking=False) is False, "second client acquires a held lock")
    check(b.locked() and not b.owned(), "second client: locked() and not owned()")
    t0 = time.monotonic()
    check(b.acquire(blocking_timeout=0.4) is False, "blocking acquire with timeout of a held lock")
    waited = time.monotonic() - t0
    check(0.3 <= waited < 5, "blocking_timeout=0.4 gave up after", waited)
    try:
        b.release()
        check(False, "release by a client that never acquired")
    except LockError:
        pass

    # extend: add to the TTL (Lua, ARGV[3]="0"), then replace it ("1")
    check(a.extend(3) is True, "extend(3)")
    ttl = pttl(r, name)
    check(3000 < ttl <= 5000, "PTTL after extend(3) of a 2 s lock", ttl)
    check(a.extend(8, replace_ttl=True) is True, "extend(8, replace_ttl=True)")
    ttl = pttl(r, name)
    check(7000 < ttl <= 8000, "PTTL after extend(8, replace_ttl=True)", ttl)
    # reacquire: TTL back to the lock's timeout
    check(a.reacquire() is True, "reacquire()")
    ttl = pttl(r, name)
    check(1000 < ttl <= 2000, "PTTL after reacquire() of a 2 s lock", ttl)
    if args.fence:
        check(fence(r, name) == tokens[0], "FENCE unchanged by extend/reacquire", tokens[0])

    # release, then everything that needs ownership fails
    a.release()
    check(not a.locked() and r.get(name) is None, "key gone after release")
    for op, fn in (("release", a.release), ("extend", lambda: a.extend(1)),
                   ("reacquire", a.reacquire)):
        try:
            fn()
            check(False, op + " of a released lock succeeded")
        except LockError:
            pass

    # acquire again: a new creation, so a strictly larger fencing token.
    # thread_local=False: another thread releases it below.
    h = r.lock(name, timeout=10, thread_local=False)
    check(h.acquire(blocking=False) is True, "acquire again after release")
    if args.fence:
        tokens.append(fence(r, name))
        check(tokens[1] > tokens[0], "FENCE increases across acquisitions", tokens)

    # blocking acquire that succeeds once the holder releases
    released_at, errors = [], []

    def release_later():
        try:
            time.sleep(0.3)
            released_at.append(time.monotonic())
            h.release()
        except Exception as ex:  # reported by the main thread
            errors.append(repr(ex))

    th = threading.Thread(target=release_later)
    th.start()
    got = b.acquire(blocking_timeout=10)
    got_at = time.monotonic()
    th.join()
    check(not errors, "the holder's release from another thread", errors)
    check(got is True, "blocking acquire while the holder releases after 0.3 s")
    check(released_at and got_at >= released_at[0], "waiter got the lock before the holder released")
    check(b.owned(), "waiter owns the lock")
    if args.fence:
        tokens.append(fence(other, name))
        check(tokens[2] > tokens[1], "FENCE increases across acquisitions", tokens)
    b.release()

    # a lock that expires: the server drops it, a new holder gets it, and
    # the old holder can neither extend nor release it
    c = r.lock(name, timeout=0.3)
    check(c.acquire(blocking=False) is True, "acquire a 300 ms lock")
    c_token = c.local.token  # what docs/redis-py.md reads right after acquiring
    if args.fence:
        tokens.append(fence(r, name))
        check(tokens[3] > tokens[2], "FENCE increases across acquisitions", tokens)
    time.sleep(0.6)
    check(r.get(name) is None, "key gone after its TTL")
    d = other.lock(name, timeout=5)
    check(d.acquire(blocking=False) is True, "acquire an expired lock")
    for op, fn in (("extend", lambda: c.extend(1)), ("reacquire", c.reacquire),
                   ("release", c.release)):
        try:
            fn()
            check(False, op + " by the expired holder succeeded")
        except LockNotOwnedError:
            pass
    check(d.owned(), "the new holder still owns the lock after the old one's attempts")
    if args.fence:
        tokens.append(fence(r, name))
        check(tokens[4] > tokens[3], "FENCE increases across acquisitions", tokens)
        # docs/redis-py.md's safe read: the expired (paused) holder's own
        # value gets None, never the successor's token; the successor's
        # gets its own.
        stale = r.execute_command("FENCE", name, "IFEQ", c_token)
        check(stale is None, "the expired holder's FENCE IFEQ lock.local.token", stale)
        own = other.execute_command("FENCE", name, "IFEQ", d.local.token)
        check(own == tokens[4], "the new holder's FENCE IFEQ lock.local.token", own)
    d.release()

    # a lock without timeout: SET NX without TTL, cannot be extended
    e = r.lock(name)
    check(e.acquire(blocking=False) is True, "acquire without timeout")
    check(pttl(r, name) == -1, "PTTL of a lock without timeout", pttl(r, name))
    try:
        e.extend(1)
        check(False, "extend of a lock without timeout succeeded")
    except LockError:
        pass
    e.release()

    # the context manager
    with r.lock(name, timeout=5, blocking_timeout=2) as f:
        check(f.owned(), "owned inside with")
        check(other.lock(name, timeout=1).acquire(blocking=False) is False, "held inside with")
    check(r.get(name) is None, "released by with")

    # the extend script on a key with no TTL answers 0 (not owned)
    g = r.lock(name, timeout=5)
    check(g.acquire(blocking=False) is True, "acquire for the PERSIST case")
    check(r.persist(name) is True, "PERSIST the lock key")
    try:
        g.extend(1)
        check(False, "extend of a lock whose key has no TTL succeeded")
    except LockNotOwnedError:
        pass
    g.release()

    return {"mode": "basic", "checks": checks, "fence": tokens,
            "redis_py": redis.__version__, "protocol": args.protocol, "tls": tls_version(r)}


def worker(args):
    r = connect(args)
    lock_name = args.prefix + ":lock"
    counter = args.prefix + ":counter"
    rnd = random.Random(args.id)
    records = []
    contended = 0
    for i in range(args.iterations):
        lk = r.lock(lock_name, timeout=10, sleep=0.005)
        if not lk.acquire(blocking=False):
            contended += 1
            if i == 0 and args.announce:
                r.incr(args.announce)
            check(lk.acquire(blocking_timeout=60) is True, "blocking acquire within 60 s")
        token = fence(r, lock_name) if args.fence else None
        v = r.get(counter)
        n = int(v) + 1 if v is not None else 1
        time.sleep(rnd.uniform(0.001, 0.004))
        r.set(counter, n)
        records.append([n, token])
        lk.release()  # raises LockNotOwnedError if the lock was lost
    return {"mode": "worker", "id": args.id, "acquisitions": len(records),
            "contended": contended, "records": records, "checks": checks,
            "tls": tls_version(r)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["basic", "worker"])
    p.add_argument("--addr", required=True)
    p.add_argument("--protocol", type=int, default=2, choices=[2, 3])
    p.add_argument("--fence", action="store_true")
    p.add_argument("--prefix", default="compat-py")
    p.add_argument("--id", type=int, default=0)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--announce", default="")
    p.add_argument("--tls-ca", default="")
    p.add_argument("--tls-cert", default="")
    p.add_argument("--tls-key", default="")
    p.add_argument("--user", default="")
    p.add_argument("--password", default="")
    args = p.parse_args()
    if (args.tls_cert or args.tls_key) and not (args.tls_ca and args.tls_cert and args.tls_key):
        p.error("--tls-cert and --tls-key go together, with --tls-ca")
    try:
        out = basic(args) if args.mode == "basic" else worker(args)
    except CheckFailed as e:
        print("FAIL: %s" % e, file=sys.stderr)
        sys.exit(1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
