"""The asyncio client against a real lockd: the sync suite's cases, plus
what only asyncio has (calls from many tasks pipelined on one connection,
cancellation)."""

import asyncio
import time

import pytest

import lockd
from conftest import free_port


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def client(server, **kw):
    kw.setdefault("connect_timeout", 2)
    kw.setdefault("command_timeout", 5)
    return lockd.AsyncClient(port=server.port, **kw)


def test_renew_calls_the_duration_lease_as_acquire_does(server):
    """Issue 25, item 11: the same names as the blocking client's."""
    async def main():
        async with client(server) as c:
            held = await c.acquire("renamed", lease="10s")
            assert (await c.renew(held, lease="20s")).lease_ms == 20000
            assert (await c.renew(held, "30s")).lease_ms == 30000
            assert (await c.renew(lease=held)).lease_ms == 30000
            with pytest.warns(DeprecationWarning, match="lease="):
                assert (await c.renew(held, length="40s")).lease_ms == 40000
            with pytest.raises(TypeError, match="lease="):
                await c.renew(held, lease="1s", length="2s")
            assert await c.release(held) is True
    run(main())


def test_grant_busy_timeout_and_growing_fences(server):
    async def main():
        async with client(server) as a, client(server) as b:
            fences = []
            for _ in range(3):
                lease = await a.acquire("job", lease="30s", wait="10s")
                fences.append(lease.fence)
                assert await b.try_acquire("job") is None
                with pytest.raises(lockd.WaitTimeoutError):
                    await b.acquire("job", wait=0)
                t0 = time.monotonic()
                with pytest.raises(lockd.WaitTimeoutError):
                    await b.acquire("job", wait="200ms")
                assert time.monotonic() - t0 >= 0.19
                assert await a.release(lease) is True
            assert fences == sorted(set(fences))
    run(main())


def test_renew_status_stale_release_and_conflict(server):
    async def main():
        async with client(server) as a, client(server) as b:
            lease = await a.acquire("r", lease=1)
            assert (await a.renew(lease, "1m")).lease_ms == 60000
            st = await b.status("r")
            assert st.held and st.fence == lease.fence
            assert await a.release(lease) is True
            assert await a.release(lease) is False
            old = await a.acquire("exp", lease="200ms")
            await asyncio.sleep(0.4)
            new = await b.acquire("exp", wait=2)
            assert new.fence > old.fence
            with pytest.raises(lockd.ConflictError):
                await a.renew(old)
            assert await a.ping() and (await a.stats())["held"] >= 1
    run(main())


def test_the_context_manager_and_keep_alive(server):
    async def main():
        async with client(server) as c, client(server) as other:
            async with c.lock("reports/build", lease="600ms",
                              wait="30s") as lease:
                for _ in range(15):          # 1.5 s: 2.5 leases
                    assert await other.try_acquire("reports/build") is None
                    await asyncio.sleep(0.1)
                st = await other.status("reports/build")
                assert st.held and st.fence == lease.fence
                assert not lease.lost
            assert not (await other.status("reports/build")).held
            held = await other.acquire("reports/build")
            with pytest.raises(lockd.WaitTimeoutError):
                async with c.lock("reports/build", wait="100ms"):
                    pytest.fail("entered a held lock")
            await other.release(held)
    run(main())


def test_keep_alive_rides_out_a_lockd_restart(server):
    async def main():
        lost = []
        async with client(server) as c, client(server) as other:
            async with c.lock("restart", lease="3s",
                              on_lost=lambda l, e: lost.append(e)) as lease:
                server.kill()
                await asyncio.sleep(0.5)
                await asyncio.to_thread(server.start_again)
                t0 = lease.deadline
                for _ in range(80):
                    if lease.deadline > t0 + 1.0:
                        break
                    await asyncio.sleep(0.1)
                assert lease.deadline > t0 + 1.0, "no renewal after restart"
                st = await other.status("restart")
                assert st.held and st.fence == lease.fence
            assert lost == [] and lease.release_error is None
            assert not (await other.status("restart")).held
    run(main())


def test_loss_cancels_the_block_and_raises_lease_lost(server):
    async def main():
        seen = []

        async def on_lost(lease, error):
            seen.append(error)

        c = client(server)
        t0 = time.monotonic()
        with pytest.raises(lockd.LeaseLostError):
            async with c.lock("down", lease="1s", on_lost=on_lost) as lease:
                server.kill()
                await asyncio.sleep(30)     # cancelled by the loss
                pytest.fail("the block was not cancelled")
        assert time.monotonic() - t0 < 3
        assert seen and seen[0] is lease.lost_error
        assert isinstance(lease.release_error, lockd.LockdConnectionError)
        await c.close()
    run(main())


def test_loss_without_cancelling(server):
    async def main():
        c = client(server)
        async with c.lock("down2", lease="1s",
                          cancel_on_loss=False) as lease:
            server.kill()
            for _ in range(30):
                if lease.lost:
                    break
                await asyncio.sleep(0.1)
            assert lease.lost
            with pytest.raises(lockd.LeaseLostError):
                lease.check()
            # not raised at exit when the block raised something else
            with pytest.raises(KeyError):
                raise KeyError
        await c.close()
    with pytest.raises(lockd.LeaseLostError):
        run(main())


def test_calls_from_many_tasks_are_pipelined_in_order(server):
    async def main():
        async with client(server) as c:
            held = await c.acquire("p/held")
            n = 1200
            calls = []
            for i in range(0, n, 3):
                calls += [c.try_acquire(f"p/{i}", lease="1m"),
                          c.status(f"p/{i}"),
                          c.acquire("p/held", wait=0)]
            results = await asyncio.gather(*calls, return_exceptions=True)
            for i in range(0, n, 3):
                lease, st, err = results[i:i + 3]
                assert lease.name == f"p/{i}"
                assert st.fence == lease.fence
                assert isinstance(err, lockd.WaitTimeoutError)
            assert await c.release(held)
    run(main())


def test_a_cancelled_acquire_gives_its_late_grant_back(server):
    async def main():
        async with client(server) as a, client(server) as b:
            lease = await a.acquire("late", lease="1m")
            waiter = asyncio.create_task(b.acquire("late", lease="1m"))
            for _ in range(50):
                if (await a.status("late")).queue == 1:
                    break
                await asyncio.sleep(0.02)
            waiter.cancel()
            await a.release(lease)        # grants the cancelled waiter
            for _ in range(100):
                st = await a.status("late")
                if not st.held:
                    break
                await asyncio.sleep(0.02)
            assert not st.held, "the late grant was kept"
            assert await b.ping()         # b's stream is still in step
    run(main())


def test_restart_reconnects_and_connection_errors(server):
    async def main():
        async with client(server) as c:
            lease = await c.acquire("rs", lease="1m")
            server.kill()
            await asyncio.to_thread(server.start_again)
            assert await c.renew(lease)   # repeated once on a new connection
            server.kill()
            await asyncio.to_thread(server.start_again)
            # The reading task saw the old connection close while we were
            # away, so even a TRY goes out on a new one.
            await asyncio.sleep(0.1)
            assert (await c.try_acquire("other")).fence > lease.fence
            assert await c.release(lease) is True
        with pytest.raises(lockd.LockdConnectionError):
            await lockd.AsyncClient(port=free_port(), connect_timeout=1).ping()
    run(main())


def test_err_codes_from_lockd(make_lockd):
    server = make_lockd("--max-held", "1")

    async def main():
        async with client(server) as c:
            lease = await c.try_acquire("one")
            with pytest.raises(lockd.LimitError):
                await c.try_acquire("two")
            from lockd import _proto
            with pytest.raises(lockd.BadRequestError):
                await c._call(_proto.Request("PING", None, "FROB\n"))
            with pytest.raises(lockd.BadArgumentError):
                await c._call(_proto.Request("TRY", None, "TRY x lease=-1\n"))
            with pytest.raises(lockd.TooLongError):
                await c._call(_proto.Request("PING", None,
                                             "PING " + "x" * 5000 + "\n"))
            waiter = asyncio.create_task(
                client(server).acquire("one", wait=10))
            for _ in range(50):
                if (await c.status("one")).queue == 1:
                    break
                await asyncio.sleep(0.02)
            await asyncio.to_thread(server.stop)
            with pytest.raises(lockd.ShutdownError):
                await waiter
            assert lease.fence >= 1
    run(main())
