"""Fail-over, against a real cluster: 3 etcd members (Debian's
etcd-server, ETCD_BIN overrides) and 3 lockd nodes on free loopback
ports, each killed by its own PID.

Endpoint lists take liblockd's syntax; a NOTLEADER that names an address
nobody configured is never followed, and a NOTLEADER loop ends within the
fail-over time; kill -9 of the leader while an ACQUIRE waits and a RENEW
is sent: both are answered by the new leader, the ACQUIRE with its own
rid (one grant, nothing left queued); an ACQUIRE whose GRANTED was lost
is sent again and finds its grant; nodes that hang end a call within
the fail-over time; with no leader left, a keep-alive reports the loss
before the lease could end.  The blocking Client and the
AsyncClient both.
"""

import asyncio
import os
import select
import signal
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

import lockd
from conftest import free_port, wait_for
from test_tls_auth_cluster import etcd_bin

TIMEOUTS = {"connect_timeout": 2, "command_timeout": 5}


# ---- endpoint lists -------------------------------------------------------
def test_endpoint_lists_take_liblockds_syntax():
    o = lockd.Options(endpoints="a:7420,b:7421,[::1]:7422,c")
    assert o.endpoints == [("a", 7420), ("b", 7421), ("::1", 7422),
                           ("c", 7420)]
    assert o.failover_timeout == 10.0
    # host= takes a list, as liblockd's; port= is the default port.
    o = lockd.Options("a,b:9", 7000)
    assert o.endpoints == [("a", 7000), ("b", 9)]
    assert lockd.Options("a:9").endpoints == [("a", 9)]
    assert lockd.Options("[::1]:9").endpoints == [("::1", 9)]
    assert lockd.Options("::1", 9).endpoints == [("::1", 9)]
    assert lockd.Options("a", 9).endpoints == [("a", 9)]
    o = lockd.Options(endpoints="lockd://a:1,lockd://b,lockd:///run/x")
    assert o.endpoints == [("a", 1), ("b", 7420), ("unix", "/run/x")]
    assert o.ssl_context is None
    o = lockd.Options(endpoints=["lockds://a:1", "lockds://b"])
    assert o.ssl_context is not None
    # One endpoint: fail-over off unless asked for.
    assert lockd.Options("a").failover_timeout is None
    assert lockd.Options("a", failover_timeout=3).failover_timeout == 3.0
    assert lockd.Options("a,b", failover_timeout=0).failover_timeout is None
    for bad in ("a:7420,", ",a", "a:0,b", "a:70000", "a:x,b", "[::1,b",
                "a,,b", "lockd://", "lockds:///run/x", "lockd://a/b",
                "lockds://a,lockd://b", "lockds://a,b"):
        with pytest.raises(ValueError):
            lockd.Options(endpoints=bad)
    # At most 16.
    lockd.Options(endpoints=",".join(f"h{i}" for i in range(16)))
    with pytest.raises(ValueError, match="16"):
        lockd.Options(endpoints=",".join(f"h{i}" for i in range(17)))


# ---- fakes ---------------------------------------------------------------
class Listener:
    """A loopback listener whose connections a thread serves with
    serve(sock), counting them; stop() ends it."""

    def __init__(self, serve=None):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.serve = serve
        self.accepted = 0
        self.answers = 0
        self._stop = False
        if serve is not None:
            self.thread = threading.Thread(target=self._run, daemon=True)
            self.thread.start()

    def _run(self):
        self.sock.settimeout(0.1)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            threading.Thread(target=self._serve, args=(conn,),
                             daemon=True).start()

    def _serve(self, conn):
        with conn:
            try:
                self.serve(self, conn)
            except OSError:
                pass

    def pending(self):
        """True when a connection waits to be accepted (nobody serves)."""
        return bool(select.select([self.sock], [], [], 0)[0])

    def stop(self):
        self._stop = True
        if self.serve is not None:
            self.thread.join(5)
        self.sock.close()


def notleader(port):
    """A fake node that answers every line with NOTLEADER naming port."""
    def serve(listener, conn):
        conn.settimeout(10)
        buf = b""
        while True:
            data = conn.recv(4096)
            if not data:
                return
            buf += data
            while b"\n" in buf:
                _, buf = buf.split(b"\n", 1)
                conn.sendall(f"ERR NOTLEADER leader=127.0.0.1:{port} not "
                             "me\r\n".encode())
                listener.answers += 1
    return serve


def lose_first_granted(upstream):
    """A proxy to upstream that closes both sides instead of passing on
    the first GRANTED it sees; later ones pass."""
    state = {"dropped": False}

    def serve(listener, conn):
        with socket.create_connection(("127.0.0.1", upstream)) as up:
            while True:
                r, _, _ = select.select([conn, up], [], [], 10)
                if not r:
                    return
                if conn in r:
                    data = conn.recv(4096)
                    if not data:
                        return
                    up.sendall(data)
                if up in r:
                    data = up.recv(4096)
                    if not data:
                        return
                    if not state["dropped"] and data.startswith(b"GRANTED "):
                        state["dropped"] = True
                        return
                    conn.sendall(data)
    return serve


def test_notleader_to_an_unconfigured_address_is_never_followed():
    # The first fake names a trap nobody configured; the second names the
    # first (configured: followed).  The client goes round and gives up.
    trap = Listener()
    first = Listener(notleader(trap.port))
    second = Listener(notleader(first.port))
    eps = [f"127.0.0.1:{first.port}", f"127.0.0.1:{second.port}"]
    try:
        c = lockd.Client(endpoints=eps, failover_timeout=1.5, **TIMEOUTS)
        began = time.monotonic()
        with pytest.raises(lockd.NotLeaderError,
                           match="no leader answered in") as e:
            c.acquire("loop", lease=5, wait=0)
        took = time.monotonic() - began
        assert took < 1.5 + 1.0, took
        assert e.value.leader is None
        c.close()

        async def main():
            a = lockd.AsyncClient(endpoints=eps, failover_timeout=1.5,
                                  **TIMEOUTS)
            with pytest.raises(lockd.NotLeaderError,
                               match="no leader answered in"):
                await a.try_acquire("loop")
            await a.close()
        asyncio.run(asyncio.wait_for(main(), 10))
        time.sleep(0.1)
        assert first.answers >= 4 and second.answers >= 2
        assert first.answers + second.answers <= 2 * (64 + 2)
        # Never a connection to the address from the wire.
        assert not trap.pending()
    finally:
        for listener in (first, second, trap):
            listener.stop()


def test_nodes_that_hang_end_a_call_within_the_failover_time():
    # They accept and never answer: each attempt ends by the command
    # timeout, longer than the fail-over time; such a stall is no healthy
    # wait that would start the search anew.
    hung = [Listener(), Listener()]
    eps = [f"127.0.0.1:{h.port}" for h in hung]
    opts = {"connect_timeout": 1, "command_timeout": 1,
            "failover_timeout": 0.5}
    try:
        c = lockd.Client(endpoints=eps, **opts)
        began = time.monotonic()
        with pytest.raises(lockd.CommandTimeoutError,
                           match="no leader answered"):
            c.ping()
        assert time.monotonic() - began < 0.5 + 2 * 1 + 1
        c.close()

        async def main():
            a = lockd.AsyncClient(endpoints=eps, **opts)
            began = time.monotonic()
            with pytest.raises(lockd.CommandTimeoutError,
                               match="no leader answered"):
                await a.ping()
            assert time.monotonic() - began < 0.5 + 2 * 1 + 1
            await a.close()
        asyncio.run(asyncio.wait_for(main(), 20))
    finally:
        for h in hung:
            h.stop()


def test_an_acquire_whose_reply_was_lost_finds_its_grant(make_lockd):
    server = make_lockd()
    for kind in ("sync", "async"):
        proxy = Listener(lose_first_granted(server.port))
        name = f"lost/{kind}"
        try:
            if kind == "sync":
                c = lockd.Client(port=proxy.port, failover_timeout=3,
                                 **TIMEOUTS)
                lease = c.acquire(name, lease=20, wait=2)
                c.close()
            else:
                async def main():
                    async with lockd.AsyncClient(
                            port=proxy.port, failover_timeout=3,
                            **TIMEOUTS) as a:
                        return await a.acquire(name, lease=20, wait=2)
                lease = asyncio.run(asyncio.wait_for(main(), 20))
            # Its own grant: the only one, nobody queued behind it.
            st = lockd.Client(port=server.port, **TIMEOUTS).status(name)
            assert st.held and st.fence == lease.fence and st.queue == 0
            assert proxy.accepted == 2
        finally:
            proxy.stop()
    # The caller's own rid: the same grant again.
    c = lockd.Client(port=server.port, **TIMEOUTS)
    a = c.acquire("mine", lease=20, rid="job-7")
    b = c.acquire("mine", lease=20, rid="job-7", wait=0)
    assert a.handle == b.handle
    assert c.try_acquire("mine", rid="job-8") is None
    c.close()


# ---- the cluster: 3 etcd members, 3 lockd nodes ----------------------------
@pytest.fixture(scope="module")
def etcd3(tmp_path_factory):
    d = tmp_path_factory.mktemp("etcd3")
    ports = [(free_port(), free_port()) for _ in range(3)]
    initial = ",".join(f"m{i}=http://127.0.0.1:{p}"
                       for i, (_, p) in enumerate(ports))
    procs = []
    try:
        for i, (client, peer) in enumerate(ports):
            curl = f"http://127.0.0.1:{client}"
            purl = f"http://127.0.0.1:{peer}"
            with open(d / f"etcd{i}.log", "wb") as log:
                procs.append(subprocess.Popen(
                    [etcd_bin(), "--name", f"m{i}", "--data-dir",
                     str(d / f"m{i}"), "--listen-client-urls", curl,
                     "--advertise-client-urls", curl,
                     "--listen-peer-urls", purl,
                     "--initial-advertise-peer-urls", purl,
                     "--initial-cluster", initial,
                     "--initial-cluster-state", "new",
                     "--initial-cluster-token", str(d)],
                    stdout=log, stderr=log))
        urls = [f"http://127.0.0.1:{c}" for c, _ in ports]

        def healthy():
            for url in urls:
                try:
                    with urllib.request.urlopen(url + "/health",
                                                timeout=1) as r:
                        if b'"health":"true"' not in r.read():
                            return False
                except OSError:
                    return False
            return True
        if not wait_for(healthy, 20, 0.1):
            pytest.fail("etcd did not start: "
                        + (d / "etcd0.log").read_text()[-2000:])
        yield ",".join(urls)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)


def role(server):
    try:
        return lockd.Client(port=server.port,
                            **TIMEOUTS).stats().get("role")
    except lockd.LockdError:
        return None


@pytest.fixture
def cluster3(make_lockd, etcd3):
    """Three nodes of a cluster of their own: (leader, [followers])."""
    name = f"pyf{free_port()}"
    nodes = [make_lockd("--etcd", etcd3, "--cluster", name)
             for _ in range(3)]
    assert wait_for(lambda: sorted(role(n) or "" for n in nodes) ==
                    ["follower", "follower", "leader"], 20, 0.1)
    leader = next(n for n in nodes if role(n) == "leader")
    yield leader, [n for n in nodes if n is not leader]
    for n in nodes:
        if n.proc is not None and n.proc.poll() is None:
            os.kill(n.proc.pid, signal.SIGCONT)


def ep(server):
    return f"127.0.0.1:{server.port}"


def served(client, name):
    try:
        return client.status(name)
    except (lockd.NotLeaderError, lockd.LockdConnectionError,
            lockd.UnavailableError):
        return None


def test_a_client_at_a_follower_is_sent_to_the_leader_it_was_given(
        cluster3):
    leader, (f1, f2) = cluster3
    # The leader last: the NOTLEADER hint is followed, not the order.
    c = lockd.Client(endpoints=[ep(f1), ep(f2), ep(leader)], **TIMEOUTS)
    lease = c.acquire("f/redirected", lease=10)
    assert c.endpoint == ("127.0.0.1", leader.port)
    assert lease.fence == 1 and c.release(lease)
    c.close()
    # Given followers only, the leader they name is never connected to.
    c = lockd.Client(endpoints=[ep(f1), ep(f2)], failover_timeout=1,
                     **TIMEOUTS)
    with pytest.raises(lockd.NotLeaderError, match="no leader answered"):
        c.acquire("f/unconfigured", lease=10, wait=0)
    assert c.endpoint != ("127.0.0.1", leader.port)
    c.close()

    async def main():
        async with lockd.AsyncClient(endpoints=[ep(f2), ep(leader)],
                                     **TIMEOUTS) as a:
            lease = await a.acquire("f/async", lease=10)
            assert a.endpoint == ("127.0.0.1", leader.port)
            assert await a.release(lease)
    asyncio.run(asyncio.wait_for(main(), 20))
    assert not lockd.Client(port=leader.port, **TIMEOUTS).status(
        "f/unconfigured").held


def test_kill_of_the_leader_during_acquire_and_renew(cluster3):
    leader, followers = cluster3
    eps = [ep(leader)] + [ep(f) for f in followers]
    holder = lockd.Client(endpoints=eps, **TIMEOUTS)
    held = holder.acquire("k/queued", lease=20)
    kept = holder.acquire("k/kept", lease=20)
    # And one a keep-alive renews every 4 s, on its own connection: long
    # enough to outlast a fail-over (about 3.5 s) from any point.
    alive = holder.acquire("k/alive", lease=12)
    lost = []
    ka = holder.keepalive(alive, on_lost=lambda l, e: lost.append(e))
    # A waiter in the queue, on a thread; an asyncio waiter too.
    got = {}

    def wait_sync():
        w = lockd.Client(endpoints=eps, **TIMEOUTS)
        try:
            got["sync"] = w.acquire("k/queued", lease=20, wait=20)
        except lockd.LockdError as e:
            got["sync"] = e
        w.close()
    t = threading.Thread(target=wait_sync, daemon=True)
    t.start()
    assert wait_for(lambda: holder.status("k/queued").queue == 1, 5)
    leader.kill()
    killed = lockd.now()
    # A RENEW sent as the leader dies is answered by the new one.
    renewed = holder.renew(kept)
    print(f"kill -9 of the leader to a RENEWED: "
          f"{lockd.now() - killed:.2f} s")
    assert renewed.fence == kept.fence
    assert holder.release(held)
    t.join(30)
    assert not t.is_alive()
    lease = got["sync"]
    assert isinstance(lease, lockd.Lease), lease
    assert lease.fence > held.fence
    st = holder.status("k/queued")
    # Granted once, nothing left in the queue.
    assert st.held and st.fence == lease.fence and st.queue == 0
    assert holder.release(lease)
    # The keep-alive renewed on the new leader, past the kill.
    assert wait_for(lambda: alive.deadline - alive.lease_ms / 1000 > killed
                    or bool(lost), 10, 0.1)
    assert not lost and not alive.lost
    assert ka.stop() is None
    assert holder.status("k/alive").fence == alive.fence
    holder.close()


def test_asyncio_kill_of_the_leader_during_acquire(cluster3):
    leader, followers = cluster3
    eps = [ep(leader)] + [ep(f) for f in followers]

    async def main():
        async with lockd.AsyncClient(endpoints=eps, **TIMEOUTS) as h, \
                lockd.AsyncClient(endpoints=eps, **TIMEOUTS) as w:
            held = await h.acquire("ka/queued", lease=20)
            waiting = asyncio.ensure_future(
                w.acquire("ka/queued", lease=20, wait=20))
            await asyncio.sleep(0.5)
            assert not waiting.done()
            leader.kill()
            assert await h.release(held)
            lease = await waiting
            assert lease.fence > held.fence
            st = await h.status("ka/queued")
            assert st.held and st.fence == lease.fence and st.queue == 0
    asyncio.run(asyncio.wait_for(main(), 40))


def test_a_keepalive_reports_the_loss_when_no_leader_comes_back(cluster3):
    leader, followers = cluster3
    eps = [ep(leader)] + [ep(f) for f in followers]
    c = lockd.Client(endpoints=eps, **TIMEOUTS)
    lost = []
    lease = c.acquire("k/doomed", lease=4)
    ka = c.keepalive(lease, on_lost=lambda l, e: lost.append(
        (lockd.now(), e)))
    try:
        # A renewal on the leader (half the lease after the grant).
        assert wait_for(lambda: ka.renewals >= 1, 5, 0.05) and not lost
        for f in followers:
            os.kill(f.proc.pid, signal.SIGSTOP)
        leader.kill()
        killed = lockd.now()
        ends = lease.deadline
        assert wait_for(lambda: bool(lost), 10, 0.05)
        at, err = lost[0]
        print(f"the loss came {at - killed:.2f} s after the kill, "
              f"{ends - at:.2f} s before the lease could end: {err}")
        assert at < ends and lease.lost
    finally:
        ka.stop()
        for f in followers:
            os.kill(f.proc.pid, signal.SIGCONT)
        c.close()
