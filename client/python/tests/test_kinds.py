"""Issue 17's kinds of lock from the Python client, against the real lockd:
limit= (a counting semaphore) and mode=shared (a read lock) on acquire and
try_acquire, sync and asyncio; the holders, limit and mode that STATUS and
LIST report; BadArgumentError for a limit the name's holders disagree
with; and a request sent again after a fail-over with its rid, limit and
mode."""

import asyncio
import socket
import threading

import pytest

import lockd
from lockd import _proto
from conftest import wait_for

TIMEOUTS = {"connect_timeout": 5, "command_timeout": 5}


def test_request_lines_carry_limit_and_mode():
    line = _proto.req_acquire("a", wait=0, limit=3).line
    assert line == b"ACQUIRE a wait=0 limit=3\n"
    line = _proto.req_try("a", rid="r1", mode="shared").line
    assert line == b"TRY a rid=r1 mode=shared\n"
    # A plain lock says nothing, as liblockd.
    assert _proto.req_try("a", limit=1, mode="exclusive").line == b"TRY a\n"
    for bad in (0, 65536, -1):
        with pytest.raises(ValueError):
            _proto.req_try("a", limit=bad)
    with pytest.raises(TypeError):
        _proto.req_try("a", limit=True)
    with pytest.raises(ValueError):
        _proto.req_acquire("a", mode="read")
    with pytest.raises(ValueError):
        _proto.req_acquire("a", limit=2, mode="shared")


def test_status_parses_holders_limit_and_mode():
    st = _proto.Status("s", {"held": "1", "fence": "9", "ttl": "100",
                             "queue": "0", "holders": "2", "limit": "3"})
    assert (st.holders, st.limit, st.mode) == (2, 3, "exclusive")
    st = _proto.Status("r", {"held": "1", "fence": "9", "ttl": "100",
                             "queue": "1", "holders": "4", "mode": "shared"})
    assert (st.holders, st.limit, st.mode) == (4, 1, "shared")
    st = _proto.Status("p", {"held": "1", "fence": "9", "ttl": "100",
                             "queue": "0"})
    assert (st.holders, st.limit, st.mode) == (1, 1, "exclusive")
    with pytest.raises(lockd.ProtocolError):
        _proto.Status("x", {"held": "1", "fence": "9", "ttl": "1",
                            "queue": "0", "holders": "many"})


def test_a_semaphore_of_two_lets_two_of_three_hold(server):
    c = [lockd.Client(port=server.port, **TIMEOUTS) for _ in range(3)]
    a = c[0].try_acquire("k/sem", "30s", limit=2)
    b = c[1].acquire("k/sem", "30s", wait="1s", limit=2)
    assert a is not None and b.fence > a.fence
    st = c[2].status("k/sem")
    assert (st.held, st.holders, st.limit, st.mode) == (True, 2, 2,
                                                        "exclusive")
    assert st.fence == b.fence                    # the newest holder's
    # The third: busy, waits in vain, or asks for another limit.
    assert c[2].try_acquire("k/sem", limit=2) is None
    with pytest.raises(lockd.WaitTimeoutError):
        c[2].acquire("k/sem", wait="200ms", limit=2)
    with pytest.raises(lockd.BadArgumentError):
        c[2].try_acquire("k/sem")
    with pytest.raises(lockd.BadArgumentError):
        c[2].try_acquire("k/sem", limit=3)
    # One permit back: the third has it, with a fence of its own.
    assert c[0].release(a)
    third = c[2].acquire("k/sem", "30s", wait="1s", limit=2)
    assert third.fence > b.fence
    assert c[1].renew(b).fence == b.fence
    assert c[1].release(b) and c[2].release(third)
    assert c[2].release(third) is False
    assert c[2].status("k/sem").holders == 0
    for x in c:
        x.close()


def test_readers_share_and_a_writer_waits_its_turn(server):
    r1 = lockd.Client(port=server.port, **TIMEOUTS)
    r2 = lockd.Client(port=server.port, **TIMEOUTS)
    w = lockd.Client(port=server.port, **TIMEOUTS)
    a = r1.try_acquire("k/rw", "30s", mode="shared")
    b = r2.acquire("k/rw", "30s", wait="1s", mode="shared")
    st = w.status("k/rw")
    assert (st.holders, st.limit, st.mode) == (2, 1, "shared")
    got = {}

    def write():
        got["lease"] = w.acquire("k/rw", "30s", wait="10s")

    writer = threading.Thread(target=write)
    writer.start()
    assert wait_for(lambda: r2.status("k/rw").queue == 1, 5)
    # A reader after the writer queues behind it: no barging.
    assert r2.try_acquire("k/rw", mode="shared") is None
    with pytest.raises(lockd.WaitTimeoutError):
        r2.acquire("k/rw", wait="200ms", mode="shared")
    assert r1.release(a)
    assert "lease" not in got                 # one reader still holds
    assert r2.release(b)
    writer.join(10)
    assert not writer.is_alive()
    assert got["lease"].fence > b.fence
    st = r1.status("k/rw")
    assert (st.holders, st.mode) == (1, "exclusive")
    assert r1.try_acquire("k/rw", mode="shared") is None
    assert w.release(got["lease"])
    for x in (r1, r2, w):
        x.close()


def test_list_reports_holders_limit_and_mode(server):
    c = lockd.Client(port=server.port, **TIMEOUTS)
    p = c.pipeline()
    p.try_acquire("k/list/a", limit=3).try_acquire("k/list/a", limit=3)
    p.try_acquire("k/list/b", mode="shared")
    p.try_acquire("k/list/b", mode="shared")
    p.try_acquire("k/list/b", mode="shared").try_acquire("k/list/c")
    assert all(isinstance(x, lockd.Lease) for x in p.execute())
    got = {s.name: (s.holders, s.limit, s.mode)
           for s in c.list(prefix="k/list/")}
    assert got == {"k/list/a": (2, 3, "exclusive"),
                   "k/list/b": (3, 1, "shared"),
                   "k/list/c": (1, 1, "exclusive")}
    assert "holders=3" in repr(c.status("k/list/b"))
    c.close()


def test_lock_takes_a_permit_of_a_semaphore(server):
    c = lockd.Client(port=server.port, **TIMEOUTS)
    with c.lock("k/ctx", "30s", wait="1s", limit=2) as one:
        with c.lock("k/ctx", "30s", wait="1s", limit=2) as two:
            assert two.fence > one.fence
            assert c.status("k/ctx").holders == 2
            assert c.try_acquire("k/ctx", limit=2) is None
    assert c.status("k/ctx").holders == 0
    c.close()


def test_asyncio_semaphore_and_readers(server):
    async def main():
        def client():
            return lockd.AsyncClient(port=server.port, **TIMEOUTS)

        async with client() as a, client() as b, client() as c:
            x = await a.try_acquire("ka/sem", "30s", limit=2)
            y = await b.acquire("ka/sem", "30s", wait="1s", limit=2)
            assert x is not None and y.fence > x.fence
            assert await c.try_acquire("ka/sem", limit=2) is None
            with pytest.raises(lockd.BadArgumentError):
                await c.acquire("ka/sem", wait=0)
            waiting = asyncio.ensure_future(
                c.acquire("ka/sem", "30s", wait="10s", limit=2))
            await asyncio.sleep(0.1)
            assert not waiting.done()
            await a.release(x)
            z = await asyncio.wait_for(waiting, 10)
            assert z.fence > y.fence
            st = await a.status("ka/sem")
            assert (st.holders, st.limit) == (2, 2)
            await b.release(y)
            await c.release(z)

            r = await a.try_acquire("ka/rw", mode="shared")
            s = await b.acquire("ka/rw", wait="1s", mode="shared")
            st = await c.status("ka/rw")
            assert (st.holders, st.mode) == (2, "shared")
            writer = asyncio.ensure_future(c.acquire("ka/rw", wait="10s"))
            for _ in range(100):
                if (await a.status("ka/rw")).queue == 1:
                    break
                await asyncio.sleep(0.02)
            assert await a.try_acquire("ka/rw", mode="shared") is None
            await a.release(r)
            await b.release(s)
            w = await asyncio.wait_for(writer, 10)
            assert w.fence > s.fence
            await c.release(w)
            pages = await a.list(prefix="ka/")
            assert [(p.name, p.holders) for p in pages] == []

    asyncio.run(asyncio.wait_for(main(), 60))


class HangUp:
    """A fake first endpoint: accepts one connection, keeps the first
    request line it reads, and hangs up."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.sock.settimeout(10)
        self.port = self.sock.getsockname()[1]
        self.line = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(10)
            data = b""
            while b"\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            self.line = data.split(b"\n")[0].decode()

    def close(self):
        self.thread.join(10)
        self.sock.close()


def _rid(line):
    return next(w[4:] for w in line.split() if w.startswith("rid="))


@pytest.mark.parametrize("kind", [{"limit": 2}, {"mode": "shared"}])
def test_fail_over_sends_again_with_rid_limit_and_mode(server, kind):
    fake = HangUp()
    c = lockd.Client(f"127.0.0.1:{fake.port},127.0.0.1:{server.port}",
                     **TIMEOUTS)
    lease = c.acquire("k/fo", "30s", wait=0, **kind)
    fake.close()
    # The fake got the request first, with a rid the client made.
    assert fake.line.startswith("ACQUIRE k/fo ")
    rid = _rid(fake.line)
    assert len(rid) == 32
    # lockd got it again with its kind...
    st = c.status("k/fo")
    assert st.holders == 1
    assert st.limit == kind.get("limit", 1)
    assert st.mode == kind.get("mode", "exclusive")
    # ...and with the same rid: a repeat finds the same grant.
    other = lockd.Client(port=server.port, **TIMEOUTS)
    again = other.acquire("k/fo", "30s", wait=0, rid=rid, **kind)
    assert (again.fence, again.handle) == (lease.fence, lease.handle)
    assert other.status("k/fo").holders == 1
    assert other.release(again)
    other.close()
    c.close()
