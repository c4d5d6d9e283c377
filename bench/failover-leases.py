#!/usr/bin/env python3
"""failover-leases.py - do leases outlive a kill -9 of the leader?

lockctl(1) promises that a lease survives a fail-over taking less than
about 40% of it, so that 10 s or more is safe at the default
--leader-lease of 3 s.  This measures that, on loopback, with every kind
of client holding a lease while other clients are busy (issue 25).

It starts a 3-member etcd (Debian's etcd-server) and three lockd nodes in
cluster mode on free ports, then, FAILOVER_KILLS times (30):

 1. four holders take a 10 s lease each on a name of their own over all
    three endpoints: `lockctl run -l 10s NAME -- sleep S`, liblockd's
    keep-alive thread and the libuv keep-alive (bench/lease_holder.c),
    and the Python client (`with client.lock(name, lease="10s")`);
 2. other clients are busy: a Python client acquiring and releasing
    names of its own (bounded: FAILOVER_LOAD_RATE cycles a second, the
    hold's length) and a `lockctl acquire` waiting on one of the held
    names;
 3. the leader is killed with SIGKILL at a random point of the holders'
    renewal cycle or, every FAILOVER_WORST_EVERY-th kill (3), at the
    worst point of one holder's (3.2 s after its last renewal, just
    before its renewal at L/3), and started again at once on the same
    port, as systemd's Restart= would;
 4. it records when a node served again (the first STATUS answered after
    the kill; also the new leader's `event=leadership` log line), for
    each holder whether it kept its lease (exit 0; 79 is lost, as
    lockctl's) and when its first renewal on the new leader took place,
    and whether the waiting client was granted only after the release.

Renewals are seen from outside, the same way for every client: three
threads ask each node for STATUS of the held names every 20 ms.  A node
that took over gives each lease now + lease + leader lease; a renewal
gives now + lease, so the first answer whose expiry minus the lease is
after the kill and not in the future dates the renewal to the
millisecond (the holders also print the renewals they saw, in the work
directory).  A kill at which a holder had given up is no measure of its
renewal: its margin (from the renewal to the moment it would give up)
is negative there, or it has none.

One line a kill, then a summary, then `N passed, N failed` counting kept
and lost leases.  Run by `make bench-failover`, which sets LOCKD,
LOCKCTL, HOLDER and PYTHONPATH (client/python).  Knobs: FAILOVER_KILLS
(30), FAILOVER_WORST_EVERY (3; 0: never), FAILOVER_LOAD_RATE (50),
FAILOVER_SEED (random), FAILOVER_LEADER_LEASE (lockd's --leader-lease;
its default, 3s: a longer one shows that losses are caught), FAILOVER_KEEP=1 (keep the work directory; it is
kept anyway, without etcd's data, when a lease was lost),
FAILOVER_RESULTS (the result file), BENCH_TMPDIR (where the work
directory goes: etcd's WAL wants a real disk).  Everything it starts
listens on 127.0.0.1 and is stopped by PID; every wait is bounded.

`failover-leases.py summary RESULTS` prints the summary of a result file
again.  Also run as its own helpers: `failover-leases.py python-holder
HOSTS NAME SECONDS` and `failover-leases.py load HOSTS PREFIX SECONDS
RATE`.
"""
import datetime
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

LEASE_S = 10.0
RENEW_S = LEASE_S / 3
WORST_AFTER_S = 3.2          # after the last renewal: just before L/3
HOLD_S = 20                  # each holder's hold, from its grant
POLL_S = 0.02                # the observer's period, per node
KINDS = ("lockctl", "keepalive", "uv", "python")
# How long after its last renewal each kind gives its lease up: lockctl
# sends SIGTERM at L/6 + L/10 before the end, the others count it lost at
# L/10 before (client/schedule.h, docs/lockctl.1).
GIVES_UP_S = {"lockctl": LEASE_S - LEASE_S / 6 - LEASE_S / 10,
              "keepalive": LEASE_S - LEASE_S / 10,
              "uv": LEASE_S - LEASE_S / 10,
              "python": LEASE_S - LEASE_S / 10}
EXIT_LOST = 79
MEMBERS = 3
NODES = 3
LOAD_MAX_CYCLES = 100000


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --- the helpers, run as processes of their own ----------------------------

def python_holder(hosts, name, seconds):
    """Holds name for seconds with the Python client's keep-alive; the
    same lines and exit codes as bench/lease_holder.c."""
    from lockd import Client, LeaseLostError, LockdError

    def say(what):
        print(f"{what} t={int(time.time() * 1000)}", flush=True)

    client = Client(hosts, connect_timeout=1, command_timeout=5)
    try:
        with client.lock(name, lease="10s", wait="10s") as lease:
            print(f"granted fence={lease.fence} t={int(time.time() * 1000)}",
                  flush=True)
            seen = lease.deadline
            end = time.monotonic() + seconds
            while time.monotonic() < end and not lease.lost:
                if lease.deadline != seen:
                    seen = lease.deadline
                    say("renewed")
                time.sleep(0.01)
            if lease.lost:
                print(f"lost t={int(time.time() * 1000)} "
                      f"why={lease.lost_error}", flush=True)
                return EXIT_LOST
    except LeaseLostError:
        return EXIT_LOST
    except LockdError as e:
        print(f"python-holder: {e}", file=sys.stderr)
        return 2
    say("released")
    return 0


def load(hosts, prefix, seconds, rate):
    """Acquires and releases names under prefix, at most rate cycles a
    second, for seconds; prints what it did."""
    from lockd import Client, LockdError

    client = Client(hosts, connect_timeout=1, command_timeout=5)
    start = time.monotonic()
    end = start + seconds
    cycles = errors = 0
    last_error = ""
    while time.monotonic() < end and cycles < LOAD_MAX_CYCLES:
        name = f"{prefix}/{cycles % 8}"
        try:
            lease = client.acquire(name, lease="5s", wait="2s")
            client.release(lease)
            cycles += 1
        except LockdError as e:
            errors += 1
            last_error = str(e)
            time.sleep(0.05)
        due = start + cycles / rate
        if due > time.monotonic():
            time.sleep(due - time.monotonic())
    print(f"cycles={cycles} errors={errors}"
          + (f" last_error={last_error!r}" if last_error else ""))
    return 0


# --- processes ---------------------------------------------------------------

def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def descendants(pid):
    """pid's children, grandchildren..., from /proc (lockctl's command runs
    in a process group of its own)."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            continue
        for kid in kids:
            found.append(kid)
            found.extend(descendants(kid))
    return found


class Proc:
    """A process we started, its exit time noted by a thread of its own."""

    def __init__(self, args, out, err=None, env=None):
        self.args = args
        self.out_path = out
        self.err_path = err or out
        with open(out, "w") as o, open(self.err_path, "a") as e:
            self.p = subprocess.Popen(args, stdout=o, stderr=e, env=env,
                                      stdin=subprocess.DEVNULL)
        self.started = time.time()
        self.ended = None
        self.rc = None
        self._thread = threading.Thread(target=self._wait, daemon=True)
        self._thread.start()

    def _wait(self):
        rc = self.p.wait()
        self.ended = time.time()
        self.rc = rc

    def wait(self, timeout):
        self._thread.join(timeout)
        return self.ended is not None

    def kill(self):
        """SIGKILL to it and to everything it started, by PID."""
        if self.ended is not None:
            return
        for pid in [self.p.pid] + descendants(self.p.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.wait(5)

    def text(self, which="out"):
        try:
            with open(self.out_path if which == "out" else self.err_path,
                      errors="replace") as f:
                return f.read()
        except OSError:
            return ""


# --- the observer --------------------------------------------------------------

class Poller(threading.Thread):
    """Asks one node for STATUS of the watched names every POLL_S; keeps
    what a serving node answered: (sent, received, node, name, fence,
    ttl_ms), and when the node last answered as the one serving."""

    def __init__(self, bench, node):
        super().__init__(daemon=True)
        self.bench = bench
        self.node = node
        self.sock = None
        self.buf = b""
        self.serving_at = 0.0     # the last answer as the serving node

    def close(self):
        if self.sock is not None:
            self.sock.close()
        self.sock = None
        self.buf = b""

    def line(self, deadline):
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                raise socket.timeout("no reply")
            self.sock.settimeout(left)
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed")
            self.buf += data
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode(errors="replace")

    def run(self):
        bench = self.bench
        while not bench.stopping.is_set():
            begin = time.time()
            names = bench.watched or ("fo/idle",)
            try:
                if self.sock is None:
                    port = bench.node_port[self.node]
                    self.sock = socket.create_connection(("127.0.0.1", port),
                                                         timeout=0.2)
                    self.sock.setsockopt(socket.IPPROTO_TCP,
                                         socket.TCP_NODELAY, 1)
                ask = names if self.serving_at > begin - 1 else names[:1]
                sent = time.time()
                self.sock.sendall(b"".join(f"STATUS {n}\n".encode()
                                           for n in ask))
                got = []
                for _ in ask:
                    got.append(self.line(sent + 1.0))
                received = time.time()
                for reply in got:
                    m = re.match(r"STATUS (\S+) held=(\d) fence=(\d+) "
                                 r"ttl=(\d+)", reply)
                    if m:
                        self.serving_at = received
                        if m.group(2) == "1":
                            bench.note(sent, received, self.node, m.group(1),
                                       int(m.group(3)), int(m.group(4)))
            except (OSError, ConnectionError):
                self.close()
            rest = begin + POLL_S - time.time()
            if rest > 0:
                time.sleep(rest)
        self.close()


# --- the cluster -----------------------------------------------------------------

class Bench:
    def __init__(self):
        self.lockd = os.environ.get("LOCKD")
        self.lockctl = os.environ.get("LOCKCTL")
        self.holder = os.environ.get("HOLDER")
        for what, path in (("LOCKD", self.lockd), ("LOCKCTL", self.lockctl),
                           ("HOLDER", self.holder)):
            if not path or not os.access(path, os.X_OK):
                sys.exit(f"bench-failover: set {what} to an executable "
                         f"(make bench-failover does)")
        for tool in ("etcd", "etcdctl"):
            if shutil.which(tool) is None:
                sys.exit(f"bench-failover: {tool} is missing "
                         "(tools/deps.sh bench)")
        self.kills = int(os.environ.get("FAILOVER_KILLS", "30"))
        self.worst_every = int(os.environ.get("FAILOVER_WORST_EVERY", "3"))
        self.load_rate = float(os.environ.get("FAILOVER_LOAD_RATE", "50"))
        self.leader_lease = os.environ.get("FAILOVER_LEADER_LEASE")
        seed = os.environ.get("FAILOVER_SEED") or str(random.randrange(1 << 30))
        self.seed = int(seed)
        self.rng = random.Random(self.seed)
        here = os.path.dirname(os.path.abspath(self.holder))
        self.work = tempfile.mkdtemp(prefix="failover.",
                                     dir=os.environ.get("BENCH_TMPDIR", here))
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        self.results = os.environ.get("FAILOVER_RESULTS") or \
            os.path.join(here, f"failover-{stamp}.txt")
        self.procs = []           # everything started, to stop at the end
        self.etcd = []
        self.nodes = [None] * NODES
        self.life = [0] * NODES
        self.node_log = [None] * NODES
        self.watched = ()
        self.records = []
        self.records_lock = threading.Lock()
        self.stopping = threading.Event()
        self.pollers = []
        self.failed_setup = False

    # The observer's records.
    def note(self, sent, received, node, name, fence, ttl):
        with self.records_lock:
            self.records.append((sent, received, node, name, fence, ttl))

    def records_of(self, name, after):
        with self.records_lock:
            return [r for r in self.records if r[3] == name and r[0] > after]

    def start(self, args, out, err=None, env=None):
        p = Proc(args, out, err, env)
        self.procs.append(p)
        return p

    def stop_all(self):
        self.stopping.set()
        for p in self.procs:
            p.kill()

    def wait_log(self, path, pattern, seconds, proc):
        end = time.time() + seconds
        while time.time() < end:
            try:
                with open(path, errors="replace") as f:
                    if pattern in f.read():
                        return True
            except OSError:
                pass
            if proc.ended is not None:
                break
            time.sleep(0.02)
        raise RuntimeError(f"no '{pattern}' in {path}")

    def start_etcd(self):
        ports = free_ports(2 * MEMBERS + NODES)
        self.client_port = ports[0:MEMBERS]
        peer = ports[MEMBERS:2 * MEMBERS]
        self.node_port = ports[2 * MEMBERS:]
        initial = ",".join(f"m{i}=http://127.0.0.1:{peer[i]}"
                           for i in range(MEMBERS))
        self.urls = ",".join(f"http://127.0.0.1:{p}"
                             for p in self.client_port)
        for i in range(MEMBERS):
            out = os.path.join(self.work, f"m{i}.log")
            self.etcd.append(self.start([
                "etcd", "--name", f"m{i}",
                "--data-dir", os.path.join(self.work, f"m{i}"),
                "--listen-client-urls", f"http://127.0.0.1:{self.client_port[i]}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{self.client_port[i]}",
                "--listen-peer-urls", f"http://127.0.0.1:{peer[i]}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer[i]}",
                "--initial-cluster", initial,
                "--initial-cluster-state", "new",
                "--initial-cluster-token", self.work,
                "--logger", "zap", "--log-outputs", "stderr"], out))
        for i in range(MEMBERS):
            self.wait_log(os.path.join(self.work, f"m{i}.log"),
                          "serving client traffic", 30, self.etcd[i])

    def start_node(self, i):
        self.life[i] += 1
        path = os.path.join(self.work, f"n{i}.{self.life[i]}.log")
        os.makedirs(os.path.join(self.work, f"n{i}"), exist_ok=True)
        addr = f"127.0.0.1:{self.node_port[i]}"
        self.nodes[i] = self.start([
            self.lockd, "--data-dir", os.path.join(self.work, f"n{i}"),
            "--listen", addr, "--advertise", addr, "--etcd", self.urls,
            "--cluster", "failover"]
            + (["--leader-lease", self.leader_lease] if self.leader_lease
               else []), path)
        self.node_log[i] = path
        self.wait_log(path, f"listening on {addr}", 30, self.nodes[i])

    def hosts(self):
        return ",".join(f"127.0.0.1:{p}" for p in self.node_port)

    def leader(self, fresh=0.5):
        """The node serving now: the one a poller heard serve last."""
        now = time.time()
        best = None
        for p in self.pollers:
            if p.serving_at > now - fresh and \
                    (best is None or p.serving_at > best.serving_at):
                best = p
        return None if best is None else best.node

    def etcd_term(self):
        try:
            out = subprocess.run(
                ["etcdctl", f"--endpoints={self.urls}",
                 "--command-timeout=2s", "endpoint", "status", "-w", "json"],
                capture_output=True, text=True, timeout=5,
                env=dict(os.environ, ETCDCTL_API="3")).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None
        terms = [int(t) for t in re.findall(r'"raft_term":(\d+)', out)]
        return max(terms) if terms else None

    def leadership_after(self, t):
        """The earliest `event=leadership role=leader` line of any node's
        log after t, as a time."""
        first = None
        for path in os.listdir(self.work):
            if not re.match(r"n\d+\.\d+\.log$", path):
                continue
            with open(os.path.join(self.work, path), errors="replace") as f:
                for line in f:
                    if "event=leadership" not in line or \
                            "role=leader" not in line:
                        continue
                    m = re.match(r"ts=(\S+)Z ", line)
                    if not m:
                        continue
                    ts = datetime.datetime.fromisoformat(m.group(1)).replace(
                        tzinfo=datetime.timezone.utc).timestamp()
                    if ts > t and (first is None or ts < first):
                        first = ts
        return first

    # --- one kill ----------------------------------------------------------

    def expiry(self, name, before=None):
        """The expiry of name's lease as the serving node last told it."""
        with self.records_lock:
            for r in reversed(self.records):
                if r[3] == name and (before is None or r[0] < before):
                    return r[1] + r[5] / 1000.0, r[4]
        return None, None

    def renewal_after(self, name, t_kill, ended):
        """When name's lease was first renewed after t_kill (see the top of
        the file) by a holder that ended at ended (None: runs), or None.
        An expiry is known to within the round trip of its STATUS: a
        change counts when it is larger than both round trips."""
        recs = [r for r in self.records_of(name, t_kill)
                if ended is None or r[1] < ended]
        if not recs:
            return None

        def expiry(rec):
            return (rec[0] + rec[1]) / 2 + rec[5] / 1000.0

        first = recs[0]
        for index, rec in enumerate(recs):
            renewed = expiry(rec) - LEASE_S
            if renewed <= t_kill or renewed > rec[1] + 0.05:
                continue
            slack = 0.05 + (rec[1] - rec[0]) + (first[1] - first[0])
            if index == 0 or abs(expiry(rec) - expiry(first)) > slack:
                return renewed
        return None

    def kill_once(self, k):
        d = os.path.join(self.work, f"k{k:02d}")
        os.makedirs(d)
        hosts = self.hosts()
        names = {kind: f"fo/k{k}/{kind}" for kind in KINDS}
        self.watched = tuple(names.values())
        env = dict(os.environ)
        holders = {}
        for kind in KINDS:
            out = os.path.join(d, f"{kind}.out")
            err = os.path.join(d, f"{kind}.err")
            if kind == "lockctl":
                args = [self.lockctl, "-H", hosts, "run", "-l", "10s",
                        names[kind], "--", "sleep", str(HOLD_S)]
            elif kind == "python":
                args = [sys.executable, os.path.abspath(__file__),
                        "python-holder", hosts, names[kind], str(HOLD_S)]
            else:
                args = [self.holder, kind, hosts, names[kind],
                        str(int(LEASE_S * 1000)), str(HOLD_S)]
            holders[kind] = self.start(args, out, err, env)
        line = {"kill": k}
        # All four held, as the serving node says.  A holder that could
        # not take its lease is a failure of its own; the kill goes on
        # for the others.
        end = time.time() + 20
        while time.time() < end:
            if all(self.expiry(names[kind])[0] is not None
                   or holders[kind].ended is not None for kind in KINDS):
                break
            time.sleep(0.05)
        missing = [kind for kind in KINDS if self.expiry(names[kind])[0] is None]
        waited_on = KINDS[k % len(KINDS)]
        waiter = self.start([self.lockctl, "-H", hosts, "acquire", "-l", "1s",
                             "-w", "40s", names[waited_on]],
                            os.path.join(d, "waiter.out"),
                            os.path.join(d, "waiter.err"))
        loader = self.start([sys.executable, os.path.abspath(__file__), "load",
                             hosts, f"fo/k{k}/load", str(HOLD_S - 4),
                             str(self.load_rate)],
                            os.path.join(d, "load.out"),
                            os.path.join(d, "load.err"), env)
        time.sleep(1.0)
        term0 = self.etcd_term()
        # When to kill.
        worst = self.worst_every > 0 and k % self.worst_every == 0
        if worst:
            target = KINDS[(k // self.worst_every) % len(KINDS)]
            expiry, _ = self.expiry(names[target])
            t_kill = (expiry - LEASE_S if expiry else time.time()) + \
                WORST_AFTER_S
            while t_kill < time.time() + 0.05:
                t_kill += RENEW_S
            line["mode"] = f"worst:{target}"
        else:
            t_kill = time.time() + self.rng.uniform(0, RENEW_S)
            line["mode"] = "random"
        time.sleep(max(0.0, t_kill - time.time()))
        leader = self.leader()
        if leader is None or len(missing) == len(KINDS):
            line["error"] = ("no leader before the kill" if leader is None
                             else "no holder took its lease")
            for p in list(holders.values()) + [waiter, loader]:
                p.kill()
            return line, holders
        before = {kind: self.expiry(names[kind]) for kind in KINDS}
        victim = self.nodes[leader]
        os.kill(victim.p.pid, signal.SIGKILL)
        t_kill = time.time()
        victim.wait(10)
        self.start_node(leader)        # at once, as Restart= would
        line["killed"] = f"n{leader}"
        # Every loss is decided by t_kill + 0.9 L; the holds end later.
        for p in holders.values():
            p.wait(max(0.0, t_kill + HOLD_S + 15 - time.time()))
        term1 = self.etcd_term()
        waiter.wait(max(0.0, t_kill + 45 - time.time()))
        loader.wait(max(0.0, t_kill + 20 - time.time()))
        for p in list(holders.values()) + [waiter, loader]:
            p.kill()                   # a no-op unless one hung
        # What happened.
        serve = None
        with self.records_lock:
            for r in self.records:
                if r[0] > t_kill and r[3] in names.values():
                    serve = r
                    break
        if serve:
            line["new"] = f"n{serve[2]}"
            line["serve_ms"] = round((serve[1] - t_kill) * 1000)
        lead_log = self.leadership_after(t_kill)
        if lead_log:
            line["leadership_log_ms"] = round((lead_log - t_kill) * 1000)
        if term0 is not None and term1 is not None:
            line["etcd_term_changes"] = term1 - term0
        for kind in KINDS:
            h = holders[kind]
            rc = h.rc
            outcome = ("not-held" if kind in missing else
                       "kept" if rc == 0 else "lost" if rc == EXIT_LOST
                       else f"error(rc={rc})")
            item = {"outcome": outcome}
            expiry, fence = before[kind]
            if expiry:
                item["since_renewal_ms"] = round(
                    (t_kill - (expiry - LEASE_S)) * 1000)
            renewed = self.renewal_after(names[kind], t_kill, h.ended)
            if renewed:
                item["renew_ms"] = round((renewed - t_kill) * 1000)
            # Until the holder let go: then the waiter may have it.
            after = [r for r in self.records_of(names[kind], t_kill)
                     if h.ended is None or r[1] < h.ended - 0.2]
            if fence and any(r[4] != fence for r in after):
                item["fence_changed"] = True
            if outcome != "kept":
                err = h.text("err").strip().splitlines()
                out = h.text("out").strip().splitlines()
                why = [ln for ln in err + out if "lost" in ln] or err or \
                    out[-1:]
                item["why"] = why[0] if why else "?"
            line[kind] = item
        # The waiter must be granted only once its holder let go (or lost).
        w = {"rc": waiter.rc}
        h = holders[waited_on]
        if waiter.rc == 0 and h.rc == 0 and waiter.ended < h.ended - 0.5:
            w["early"] = True
        w["on"] = waited_on
        line["waiter"] = w
        line["load"] = loader.text().strip() or f"rc={loader.rc}"
        return line, holders

    # --- reporting ---------------------------------------------------------

    @staticmethod
    def format(line):
        if "error" in line:
            return f"kill={line['kill']} mode={line.get('mode')} " \
                f"error={line['error']!r}"
        words = [f"kill={line['kill']}", f"mode={line['mode']}",
                 f"killed={line['killed']}", f"new={line.get('new', '?')}",
                 f"serve_ms={line.get('serve_ms', '?')}",
                 f"leadership_log_ms={line.get('leadership_log_ms', '?')}",
                 f"etcd_term_changes={line.get('etcd_term_changes', '?')}"]
        for kind in KINDS:
            item = line[kind]
            text = f"{kind}={item['outcome']}" \
                f",since_renewal_ms={item.get('since_renewal_ms', '?')}" \
                f",renew_ms={item.get('renew_ms', '?')}"
            if item.get("fence_changed"):
                text += ",FENCE_CHANGED"
            words.append(text)
        w = line["waiter"]
        words.append(f"waiter={'EARLY' if w.get('early') else 'ok'}"
                     f",rc={w['rc']},on={w['on']}")
        m = re.match(r"cycles=(\d+) errors=(\d+)", line["load"])
        words.append(f"load_cycles={m.group(1)},errors={m.group(2)}" if m
                     else f"load={line['load']!r}")
        out = " ".join(words)
        for kind in KINDS:
            if "why" in line[kind]:
                out += f"\n  {kind}: {line[kind]['why']}"
        return out

    @staticmethod
    def summary(lines):
        def pct(values):
            if not values:
                return "-"
            values = sorted(values)
            return f"p50 {statistics.median(values):.0f} ms, " \
                f"max {values[-1]} ms (n={len(values)})"

        done = [ln for ln in lines if "error" not in ln]
        out = [f"kills: {len(lines)} ({len(lines) - len(done)} not run: "
               "no leader, or no holder took its lease)"
               if len(done) < len(lines)
               else f"kills: {len(lines)}"]
        out.append("fail-over, kill -9 to the first STATUS answered: "
                   + pct([ln["serve_ms"] for ln in done if "serve_ms" in ln]))
        out.append("fail-over, kill -9 to the new leader's leadership line: "
                   + pct([ln["leadership_log_ms"] for ln in done
                          if "leadership_log_ms" in ln]))
        changes = sum(1 for ln in done if ln.get("etcd_term_changes", 0))
        out.append(f"kills during which etcd elected a new leader: {changes}")
        passed = failed = 0
        for kind in KINDS:
            items = [ln[kind] for ln in done]
            # The margin: from the renewal on the new leader to the moment
            # this kind would have given the lease up.
            renewing = [(ln, i) for ln, i in zip(done, items)
                        if i["outcome"] in ("kept", "lost")]
            margins = [(round(GIVES_UP_S[kind] * 1000 - i["since_renewal_ms"]
                              - i["renew_ms"]), ln["kill"])
                       for ln, i in renewing
                       if "renew_ms" in i and "since_renewal_ms" in i]
            kept = sum(1 for i in items if i["outcome"] == "kept")
            lost = sum(1 for i in items if i["outcome"] == "lost")
            other = len(items) - kept - lost
            passed += kept
            failed += lost + other
            out.append(f"{kind:9s}: kept {kept}, lost {lost}"
                       + (f", not held or failed {other}" if other else "")
                       + "; kill to first renewal on the new leader: "
                       + pct([i["renew_ms"] for _, i in renewing
                              if "renew_ms" in i])
                       + "; at its worst point: "
                       + pct([i["renew_ms"] for ln, i in renewing
                              if ln["mode"] == f"worst:{kind}"
                              and "renew_ms" in i])
                       + ("; least margin before it would give up: "
                          f"{min(margins)[0]} ms (kill {min(margins)[1]})"
                          if margins else ""))
        early = sum(1 for ln in done if ln["waiter"].get("early"))
        fences = sum(1 for ln in done for kind in KINDS
                     if ln[kind].get("fence_changed"))
        out.append(f"waiters granted before the holder let go: {early}; "
                   f"fences changed under a holder: {fences}")
        failed += early + fences + len(lines) - len(done)
        out.append(f"{passed} passed, {failed} failed")
        return "\n".join(out), failed

    def run(self):
        header = [
            f"# lockd fail-over leases {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
            f"# machine: {os.cpu_count()} CPUs, load average at start "
            f"{open('/proc/loadavg').read().split()[:3]}; no pinning",
            f"# lockd {self.lockd}, lockctl {self.lockctl}, holder "
            f"{self.holder}, python client {os.environ.get('PYTHONPATH', '?')}",
            f"# kills={self.kills} worst_every={self.worst_every} "
            f"lease={LEASE_S:.0f}s hold={HOLD_S}s load_rate={self.load_rate}/s "
            f"seed={self.seed}; {MEMBERS} etcd members, {NODES} lockd nodes "
            f"(--leader-lease {self.leader_lease or '3s, the default'})"]
        with open(self.results, "w") as f:
            f.write("\n".join(header) + "\n")
        log("\n".join(header))
        self.start_etcd()
        for i in range(NODES):
            self.start_node(i)
        self.pollers = [Poller(self, i) for i in range(NODES)]
        for p in self.pollers:
            p.start()
        end = time.time() + 30
        while self.leader() is None and time.time() < end:
            time.sleep(0.05)
        lines = []
        for k in range(1, self.kills + 1):
            line, _ = self.kill_once(k)
            lines.append(line)
            text = self.format(line)
            with open(self.results, "a") as f:
                f.write(text + "\n")
                f.write("# " + json.dumps(line) + "\n")
            log(text)
            # The next kill once a node serves again.
            end = time.time() + 30
            while self.leader() is None and time.time() < end:
                time.sleep(0.05)
            with self.records_lock:
                self.records = [r for r in self.records
                                if r[0] > time.time() - 5]
        text, failed = self.summary(lines)
        with open(self.results, "a") as f:
            f.write(f"# load average at end: "
                    f"{open('/proc/loadavg').read().split()[:3]}\n")
            f.write(text + "\n")
        print(text, flush=True)
        log(f"bench-failover: per-kill lines and the summary in {self.results}")
        return failed

    def cleanup(self, failed):
        self.stop_all()
        keep = os.environ.get("FAILOVER_KEEP") or failed
        for i in range(MEMBERS):
            shutil.rmtree(os.path.join(self.work, f"m{i}"), ignore_errors=True)
        if keep:
            log(f"bench-failover: kept {self.work} (logs; etcd's data removed)")
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "python-holder":
        return python_holder(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    if len(sys.argv) > 1 and sys.argv[1] == "load":
        return load(sys.argv[2], sys.argv[3], float(sys.argv[4]),
                    float(sys.argv[5]))
    if len(sys.argv) == 3 and sys.argv[1] == "summary":
        with open(sys.argv[2]) as f:
            lines = [json.loads(ln[2:]) for ln in f if ln.startswith("# {")]
        text, failed = Bench.summary(lines)
        print(text)
        return 1 if failed else 0
    if len(sys.argv) > 1:
        sys.exit(__doc__)

    def interrupted(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    bench = Bench()
    failed = 1
    try:
        failed = bench.run()
    except KeyboardInterrupt:
        log("bench-failover: interrupted")
    finally:
        bench.cleanup(failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
