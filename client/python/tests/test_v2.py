"""Protocol v2's commands and options from the Python client, against the
real lockd: owner= and delay= on ACQUIRE and TRY, LIST a page at a time,
FORCE (never a newer holder), CHECK, and WATCH (at once, by wait, and
woken by another client's release), sync and asyncio."""

import asyncio
import threading

import pytest

import lockd

TIMEOUTS = {"connect_timeout": 5, "command_timeout": 5}


def test_owner_and_delay_show_in_status(server):
    c = lockd.Client(port=server.port, **TIMEOUTS)
    lease = c.acquire("v2/owned", lease="1m", owner="builder-7", delay="5s")
    st = c.status("v2/owned")
    assert st.owner == "builder-7" and st.delay_ms == 0
    # FORCE ends it as an expiry would: the lock-delay runs, TRY is HELD.
    assert c.force("v2/owned", lease.fence) is True
    st = c.status("v2/owned")
    assert not st.held and 0 < st.delay_ms <= 5000
    assert c.try_acquire("v2/owned") is None
    # RELEASE never starts a lock-delay.
    other = c.try_acquire("v2/released", delay="5s")
    assert c.release(other)
    assert c.try_acquire("v2/released") is not None
    with pytest.raises(ValueError):
        c.acquire("v2/x", delay="5")          # no unit: refused here
    c.close()


def test_list_pages_through_the_locks_in_name_order(server):
    c = lockd.Client(port=server.port, **TIMEOUTS)
    names = [f"v2/list/{i:02d}" for i in range(25)]
    p = c.pipeline()
    for n in names:
        p.try_acquire(n, lease="1m", owner="lister")
    p.try_acquire("v2/other")
    assert all(p.execute())
    page = c.list(prefix="v2/list/", limit=10)
    assert [s.name for s in page] == names[:10] and page.next == names[9]
    assert all(s.held and s.owner == "lister" for s in page)
    page = c.list(prefix="v2/list/", after=page.next, limit=10)
    assert [s.name for s in page] == names[10:20]
    last = c.list(prefix="v2/list/", after=page.next, limit=10)
    assert [s.name for s in last] == names[20:] and last.next is None
    assert [s.name for s in c.list_all("v2/list/")] == names
    assert [s.name for s in c.list(prefix="v2/nothing")] == []
    # In a pipeline, between one-line replies, in order.
    p = c.pipeline()
    p.ping().list(prefix="v2/list/", limit=3).status("v2/other")
    pong, page, st = p.execute()
    assert pong is True and len(page) == 3 and st.held
    with pytest.raises(ValueError):
        c.list(limit=1001)
    c.close()


def test_force_never_frees_a_newer_holder_and_check_tells(server):
    c = lockd.Client(port=server.port, **TIMEOUTS)
    old = c.acquire("v2/forced", lease="1m")
    assert c.check("v2/forced", old.fence)
    assert c.force("v2/forced", old.fence) is True
    with pytest.raises(lockd.ConflictError):
        c.renew(old)
    new = c.acquire("v2/forced", lease="1m")
    assert new.fence > old.fence
    assert c.force("v2/forced", old.fence) is False   # stale: nothing
    check = c.check("v2/forced", old.fence)
    assert not check and check.fence == new.fence
    current = c.check("v2/forced", new.fence)
    assert current and current.fence == new.fence and current.ttl_ms > 0
    assert c.status("v2/forced").fence == new.fence
    with pytest.raises(ValueError):
        c.force("v2/forced", 0)
    c.close()


def test_watch_answers_at_once_times_out_and_wakes_on_a_release(server):
    c = lockd.Client(port=server.port, **TIMEOUTS)
    lease = c.acquire("v2/watched", lease="1m")
    st = c.watch("v2/watched", fence=0, wait=0)
    assert st.held and st.fence == lease.fence and st.cause == "granted"
    with pytest.raises(lockd.WaitTimeoutError):
        c.watch("v2/watched", fence=lease.fence, wait="100ms")
    # A watcher on a client of its own, woken by the release.
    watcher = lockd.Client(port=server.port, **TIMEOUTS)
    seen = []
    t = threading.Thread(target=lambda: seen.append(
        watcher.watch("v2/watched", fence=lease.fence, wait="10s")))
    t.start()
    c.release(lease)
    t.join(15)
    assert not t.is_alive()
    assert not seen[0].held and seen[0].cause == "released"
    watcher.close()
    c.close()


def test_asyncio_v2_calls(server):
    async def main():
        async with lockd.AsyncClient(port=server.port, **TIMEOUTS) as a, \
                lockd.AsyncClient(port=server.port, **TIMEOUTS) as w:
            lease = await a.acquire("v2/async", lease="1m", owner="aio",
                                    delay="2s")
            watch = asyncio.ensure_future(
                w.watch("v2/async", fence=lease.fence, wait="10s"))
            page = await a.list(prefix="v2/async")
            assert [s.owner for s in page] == ["aio"]
            assert await a.check("v2/async", lease.fence)
            assert await a.force("v2/async", lease.fence) is True
            st = await watch
            assert st.cause == "forced" and 0 < st.delay_ms <= 2000
            assert await a.try_acquire("v2/async") is None
            assert not await a.check("v2/async", lease.fence)
    asyncio.run(asyncio.wait_for(main(), 30))
