#!/usr/bin/env python3
"""sizing.py - memory and data.mdb bytes per held lock, measured.

Starts the real lockd on a fresh data directory, takes N locks with names
of the given length (pipelined TRYs, lease 1 h) and reports:

  rss_per_lock   (VmRSS after - VmRSS before) / N, bytes
  anon_per_lock  the same for RssAnon (the heap: the table, the names)
  mdb_per_lock   data.mdb bytes / N after a clean stop (every record
                 checkpointed into LMDB), with the names taken in random
                 order, as a busy lockd takes them
  mdb_churn_per_lock
                 the same after ROUNDS rounds of churn at N held: a random
                 half released and as many new names taken, in large
                 pipelined batches, so that page splits, merges and the
                 copy-on-write of large commits leave what they leave; the
                 file's size is its high-water mark (LMDB never shrinks it)

With --limit K (issue 17's semaphores), each name is a semaphore of K
permits taken K times (TRY name limit=K), so N counts holders over N / K
names, and every figure is per holder.  A lockd that refuses limit= is
reported as such, and the run ends without failing.

Usage: bench/sizing.py [--lockd build/lockd] [--locks N] [--rounds R]
                       [--name-len L ...] [--limit K]
make sizing runs it for 16- and 255-byte names.
"""
import argparse
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

CHUNK = 2000    # requests per write


def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def start(lockd, data, log, locks):
    log_f = open(log, "w")
    p = subprocess.Popen([lockd, "--listen", "127.0.0.1:0", "--data-dir",
                          data, "--max-lease", "1h",
                          "--max-held", str(locks + 1000),
                          "--map-size", str(8 << 30)],
                         stderr=log_f, stdout=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        with open(log) as f:
            m = re.search(r"event=listen addr=127\.0\.0\.1:(\d+)", f.read())
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            sys.exit(f"sizing: lockd exited: {open(log).read()}")
        time.sleep(0.05)
    p.kill()
    sys.exit("sizing: lockd did not listen within 30 s")


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=120)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def lines(self, n):
        out = []
        while len(out) < n:
            while b"\n" not in self.buf:
                chunk = self.s.recv(1 << 20)
                if not chunk:
                    sys.exit("sizing: lockd closed the connection")
                self.buf += chunk
            parts = self.buf.split(b"\n")
            self.buf = parts[-1]
            out.extend(p.rstrip(b"\r") for p in parts[:-1])
        return out

    def run(self, reqs):
        """Sends the requests CHUNK at a time; returns the replies."""
        replies = []
        for i in range(0, len(reqs), CHUNK):
            part = reqs[i:i + CHUNK]
            self.s.sendall(b"".join(part))
            replies.extend(self.lines(len(part)))
        return replies


def name(i, length):
    base = f"lock/{i:09d}/".encode()
    return (base + b"x" * length)[:length]


class Unsupported(Exception):
    pass


LIMIT = 1       # --limit: holders per name


def holder_name(i, length):
    """Holder i's lock: LIMIT holders in a row share a name."""
    return name(i // LIMIT, length)


def take(conn, ids, length, handles):
    opt = b" limit=%d" % LIMIT if LIMIT > 1 else b""
    reqs = [b"TRY " + holder_name(i, length) + opt + b" lease=1h\n"
            for i in ids]
    for i, r in zip(ids, conn.run(reqs)):
        if LIMIT > 1 and (r.startswith(b"ERR BADARG") or
                          r.startswith(b"ERR BADREQ")):
            raise Unsupported(r.decode(errors="replace"))
        if not r.startswith(b"GRANTED "):
            sys.exit(f"sizing: TRY got {r!r}")
        handles[i] = r.split(b"handle=")[1].split()[0]


def release(conn, ids, length, handles):
    reqs = [b"RELEASE " + holder_name(i, length) + b" " + handles.pop(i) +
            b"\n" for i in ids]
    for r in conn.run(reqs):
        if not r.startswith(b"RELEASED "):
            sys.exit(f"sizing: RELEASE got {r!r}")


def measure(lockd, locks, length, rounds, rng):
    work = tempfile.mkdtemp(prefix="lockd-sizing-")
    data, log = os.path.join(work, "data"), os.path.join(work, "log")
    mdb = os.path.join(data, "data.mdb")
    try:
        p, port = start(lockd, data, log, locks)
        conn = Conn(port)
        conn.run([b"PING\n"])
        rss0, anon0 = status_kb(p.pid, "VmRSS"), status_kb(p.pid, "RssAnon")
        ids = list(range(locks))
        rng.shuffle(ids)
        handles = {}
        try:
            take(conn, ids, length, handles)
        except Unsupported as e:
            conn.s.close()
            stop(p)
            print(f"sizing: lockd: limit=/mode= not supported by this build "
                  f"- skipped ({e})", flush=True)
            return None
        time.sleep(0.5)
        rss1, anon1 = status_kb(p.pid, "VmRSS"), status_kb(p.pid, "RssAnon")
        conn.s.close()
        stop(p)
        mdb_fill = os.stat(mdb).st_size
        # Churn at N held: a random half out, as many new names in.
        p, port = start(lockd, data, log, locks)
        conn = Conn(port)
        next_id = locks
        for _ in range(rounds):
            out = rng.sample(sorted(handles), locks // 2)
            release(conn, out, length, handles)
            # Fresh ids: with --limit, fresh names too (locks is a
            # multiple of 2 * LIMIT), so no name gets more than LIMIT.
            new = list(range(next_id, next_id + len(out)))
            next_id += len(out)
            take(conn, new, length, handles)
        conn.s.close()
        stop(p)
        mdb_churn = os.stat(mdb).st_size
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "name_len": length, "locks": locks, "rounds": rounds,
        "rss_per_lock": (rss1 - rss0) * 1024 / locks,
        "anon_per_lock": (anon1 - anon0) * 1024 / locks,
        "mdb_per_lock": mdb_fill / locks,
        "mdb_churn_per_lock": mdb_churn / locks,
        "mdb_bytes": mdb_fill, "mdb_churn_bytes": mdb_churn,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lockd", default="build/lockd")
    ap.add_argument("--locks", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--name-len", type=int, action="append")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit", type=int, default=1)
    a = ap.parse_args()
    if not 1 <= a.limit <= 65535:
        ap.error("--limit takes 1 to 65535")
    global LIMIT
    LIMIT = a.limit
    locks = a.locks
    if LIMIT > 1:
        locks = max(a.locks // (2 * LIMIT), 1) * 2 * LIMIT
    rng = random.Random(a.seed)
    for length in a.name_len or [16, 255]:
        r = measure(os.path.abspath(a.lockd), locks, length, a.rounds, rng)
        if r is None:
            return
        if LIMIT > 1:
            print(f"sizing: holders of {LIMIT}-permit semaphores; "
                  "each figure is per holder", flush=True)
        print("sizing: name_len={name_len} locks={locks} "
              "rss_per_lock={rss_per_lock:.0f} "
              "anon_per_lock={anon_per_lock:.0f} "
              "mdb_per_lock={mdb_per_lock:.0f} "
              "mdb_churn_per_lock={mdb_churn_per_lock:.0f} "
              "(data.mdb {mdb_bytes} bytes filled, {mdb_churn_bytes} after "
              "{rounds} rounds of churn)".format(**r), flush=True)


if __name__ == "__main__":
    main()
