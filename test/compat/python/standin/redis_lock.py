"""A STAND-IN for python-redis-lock's redis_lock module, NOT the library.

python-redis-lock is on PyPI only (no Debian package), which the test
machines cannot reach. test/compat/python/docs_page.py puts this directory on
sys.path only when `import redis_lock` fails, so that docs/python-redis-lock.md
can run; with the real library installed, the page runs on it instead.

What it reproduces, written from the library's documented behaviour (no code
of the library is copied): the constructor's parameters, the key layout and
the value — the lock is the string key "lock:<name>" holding Lock.id (a random
ASCII string), taken with SET NX EX <expire> — and release, which sends the
library's own UNLOCK_SCRIPT as recorded in test/testdata/scripts.json (delete
the key if it holds Lock.id, push the signal list "lock-signal:<name>").
What it does not: blocking acquisition waits by polling, not by BLPOP on the
signal list; auto_renewal, extend, reset and reset_all are absent.
"""

import base64
import json
import os
import time

__version__ = "stand-in"

_SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "..", "..", "..", "testdata", "scripts.json")
with open(_SCRIPTS) as f:
    UNLOCK_SCRIPT = json.load(f)["python-redis-lock/UNLOCK_SCRIPT"]["text"]


class NotAcquired(RuntimeError):
    pass


class Lock(object):
    def __init__(self, redis_client, name, expire=None, id=None, auto_renewal=False,
                 strict=True, signal_expire=1000):
        if auto_renewal:
            raise NotImplementedError("the stand-in has no auto_renewal")
        self._client = redis_client
        self._expire = int(expire) if expire else None
        self._signal_expire = signal_expire
        self._id = id if id is not None else base64.b64encode(os.urandom(18)).decode("ascii")
        self._name = "lock:" + name
        self._signal = "lock-signal:" + name

    @property
    def id(self):
        return self._id

    def acquire(self, blocking=True, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._client.set(self._name, self._id, nx=True, ex=self._expire):
                return True
            if not blocking or (deadline is not None and time.monotonic() >= deadline):
                return False
            time.sleep(0.05)

    def release(self):
        if self._client.eval(UNLOCK_SCRIPT, 2, self._name, self._signal,
                             self._id, self._signal_expire) == 1:
            raise NotAcquired("Lock %s is not acquired or it already expired." % self._name)
