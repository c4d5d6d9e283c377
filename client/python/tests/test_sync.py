"""The blocking client against a real lockd started for each test."""

import os
import socket
import threading
import time

import pytest

import lockd
from lockd import _proto
from conftest import faulty_bin, free_port, wait_for


def client(server, **kw):
    kw.setdefault("connect_timeout", 2)
    kw.setdefault("command_timeout", 5)
    return lockd.Client(port=server.port, **kw)


def test_grant_release_and_fences_that_only_grow(server):
    c = client(server)
    fences = []
    for _ in range(5):
        lease = c.acquire("inventory/sku-42", lease="30s", wait="10s")
        assert lease.name == "inventory/sku-42" and lease.lease_ms == 30000
        assert lease.handle.startswith(f"{lease.fence}-")
        fences.append(lease.fence)
        assert c.release(lease) is True
    assert fences == sorted(set(fences))
    assert c.ping() is True


def test_busy_try_and_waits_that_time_out(server):
    a, b = client(server), client(server)
    lease = a.acquire("job")
    assert b.try_acquire("job") is None
    with pytest.raises(lockd.WaitTimeoutError):
        b.acquire("job", wait=0)
    t0 = time.monotonic()
    with pytest.raises(lockd.WaitTimeoutError) as e:
        b.acquire("job", wait="300ms")
    assert time.monotonic() - t0 >= 0.29
    assert e.value.code == "TIMEOUT"
    assert b.ping()  # a server error leaves the connection usable
    a.release(lease)
    assert b.try_acquire("job").fence > lease.fence


def test_a_waiter_is_granted_when_the_holder_releases(server):
    a, b = client(server), client(server)
    lease = a.acquire("q")
    got = []
    t = threading.Thread(target=lambda: got.append(b.acquire("q", wait=5)))
    t.start()
    assert wait_for(lambda: a.status("q").queue == 1, 5)
    a.release(lease)
    t.join(10)
    assert got and got[0].fence > lease.fence


def test_renew_status_and_a_stale_release(server):
    c = client(server)
    lease = c.acquire("r", lease=2)
    assert c.renew(lease, "1m") is lease and lease.lease_ms == 60000
    st = c.status("r")
    assert st.held and st.fence == lease.fence and 0 < st.ttl_ms <= 60000
    assert lease.deadline > lockd.now() + 55
    assert c.release(lease) is True
    assert c.release(lease) is False  # NOTHELD: success, nothing happens
    st = c.status("r")
    assert not st.held and st.fence == 0 and st.queue == 0


def test_renew_calls_the_duration_lease_as_acquire_does(server):
    """Issue 25, item 11: acquire(lease=...) and renew(held, lease=...)
    name the duration alike; the old spellings still work."""
    c = client(server)
    held = c.acquire("renamed", lease="10s")
    assert c.renew(held, lease="20s") is held and held.lease_ms == 20000
    assert c.renew(held, "30s").lease_ms == 30000
    assert c.renew(lease=held).lease_ms == 30000       # the old keyword
    with pytest.warns(DeprecationWarning, match="lease="):
        assert c.renew(held, length="40s").lease_ms == 40000
    with pytest.raises(TypeError, match="lease="):
        c.renew(held, lease="1s", length="2s")
    with pytest.raises(TypeError, match="takes a Lease"):
        c.renew()
    p = c.pipeline()
    p.renew(held, lease="50s")
    assert p.execute()[0].lease_ms == 50000
    assert c.release(held) is True


def test_errors_cut_a_long_value(server):
    """Issue 25, item 14: a 100 KB name is not repeated in full."""
    c = client(server)
    for call in (lambda: c.acquire("n" * 100_000),
                 lambda: c.status("n" * 100_000),
                 lambda: c.acquire("ok", owner="o" * 100_000),
                 lambda: lockd.Lease("x", "h" * 100_000)):
        with pytest.raises(ValueError) as e:
            call()
        assert len(str(e.value)) < 200 and "100000 characters" in str(e.value)


def test_a_saved_handle_renews_and_releases(server):
    c = client(server)
    lease = c.acquire("saved", lease=5)
    again = lockd.Lease("saved", lease.handle)
    assert client(server).renew(again, 10).lease_ms == 10000
    assert client(server).release(again) is True


def test_conflict_after_the_lease_expired(server):
    a, b = client(server), client(server)
    old = a.acquire("exp", lease="200ms")
    time.sleep(0.4)
    new = b.acquire("exp", wait=2)
    assert new.fence > old.fence
    with pytest.raises(lockd.ConflictError):
        a.renew(old)
    assert a.release(old) is False


def test_the_context_manager(server):
    c = client(server)
    other = client(server)
    with c.lock("reports/build", lease="1m", wait="30s") as lease:
        st = other.status("reports/build")
        assert st.held and st.fence == lease.fence
        assert other.try_acquire("reports/build") is None
    assert not other.status("reports/build").held
    held = other.acquire("reports/build")
    with pytest.raises(lockd.WaitTimeoutError):
        with c.lock("reports/build", wait="100ms"):
            pytest.fail("entered a held lock")
    other.release(held)


def test_the_context_manager_releases_when_the_block_raises(server):
    c = client(server)
    with pytest.raises(KeyError):
        with c.lock("boom", lease=30):
            raise KeyError("x")
    assert not c.status("boom").held


def test_keep_alive_holds_a_short_lease_for_longer(server):
    c = client(server)
    other = client(server)
    with c.lock("short", lease="600ms") as lease:
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            assert other.try_acquire("short") is None
            time.sleep(0.1)
        assert not lease.lost
        assert other.status("short").fence == lease.fence
    assert other.try_acquire("short") is not None


def test_keep_alive_rides_out_a_lockd_restart(server):
    c = client(server)
    lost = []
    with c.lock("restart", lease="3s",
                on_lost=lambda l, e: lost.append(e)) as lease:
        server.kill()                       # kill -9
        time.sleep(0.5)
        server.start_again()                # same port, same data dir
        other = client(server)
        # The lease survived the restart, and renewals went on over a new
        # connection: it outlives its 3 s from before the kill.
        t0 = lease.deadline
        assert wait_for(lambda: lease.deadline > t0 + 1.0, 8), \
            "no renewal after the restart"
        st = other.status("restart")
        assert st.held and st.fence == lease.fence
        assert other.try_acquire("restart") is None
    assert lost == []
    assert lease.release_error is None
    assert not other.status("restart").held


def test_loss_is_reported_when_lockd_stays_down(server):
    c = client(server)
    lost = threading.Event()
    seen = []

    def on_lost(lease, error):
        seen.append((lease, error))
        lost.set()

    with pytest.raises(lockd.LeaseLostError):
        with c.lock("down", lease="1s", on_lost=on_lost) as lease:
            server.kill()
            assert lost.wait(3.0), "no loss reported"
            # before the lease could end: at least a tenth of it early
            assert lockd.now() < lease.deadline
            assert lease.lost
            with pytest.raises(lockd.LeaseLostError):
                lease.check()
    assert seen and seen[0][0] is lease
    assert isinstance(seen[0][1], lockd.LeaseLostError)
    assert isinstance(lease.release_error, lockd.LockdConnectionError)


def test_loss_is_reported_when_a_renewal_is_refused(server):
    c = client(server)
    lease = c.acquire("refused", lease="300ms")
    lease.handle = f"{lease.fence}-0000000000000000"  # not the holder's
    ka = c.keepalive(lease, on_lost=None)
    assert wait_for(lambda: lease.lost, 2)
    assert ka.stop() is lease.lost_error
    assert "refused" in str(lease.lost_error)


def test_pipelining_past_the_window_keeps_replies_in_order(server):
    c = client(server)
    held = c.acquire("p/held")
    p = c.pipeline()
    n = 1500
    for i in range(n):
        if i % 3 == 0:
            p.try_acquire(f"p/{i}", lease="1m")
        elif i % 3 == 1:
            p.status(f"p/{i - 1}")
        else:
            p.acquire("p/held", wait=0)
    assert len(p) == n
    results = p.execute()
    assert len(results) == n
    for i in range(0, n, 3):
        lease, st, err = results[i:i + 3]
        assert lease.name == f"p/{i}"
        assert st.name == f"p/{i}" and st.fence == lease.fence
        assert isinstance(err, lockd.WaitTimeoutError)
    fences = [results[i].fence for i in range(0, n, 3)]
    assert fences == sorted(fences)
    assert c.release(held)


def test_unix_socket(make_lockd, tmp_path):
    path = str(tmp_path / "lockd.sock")
    make_lockd("--unix", path)
    c = lockd.Client(unix_path=path, command_timeout=2)
    lease = c.acquire("over/unix")
    assert lockd.Client(endpoints=[f"unix:{path}"]).status("over/unix").held
    assert c.release(lease)


def test_a_closed_port_is_a_connection_error():
    with pytest.raises(lockd.LockdConnectionError) as e:
        lockd.Client(port=free_port(), connect_timeout=1).ping()
    assert isinstance(e.value, ConnectionError)


def test_endpoints_are_tried_in_order(server):
    c = lockd.Client(endpoints=[f"127.0.0.1:{free_port()}",
                                f"127.0.0.1:{server.port}"],
                     connect_timeout=1)
    assert c.ping() and c.endpoint == ("127.0.0.1", server.port)


def test_a_silent_server_times_the_command_out():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        c = lockd.Client(port=silent.getsockname()[1], command_timeout=0.3)
        t0 = time.monotonic()
        with pytest.raises(lockd.CommandTimeoutError):
            c.ping()
        assert 0.25 < time.monotonic() - t0 < 3


def test_a_restart_under_a_client_reconnects(server):
    c = client(server)
    lease = c.acquire("rs", lease="1m")
    server.kill()
    server.start_again()
    # RENEW, RELEASE, STATUS, PING are safe to repeat: a dead connection
    # from before the restart is replaced once, silently.
    assert c.ping()
    server.kill()
    server.start_again()
    assert c.renew(lease).fence == lease.fence
    server.kill()
    server.start_again()
    # TRY is not: the caller hears of it, and the next call connects.
    with pytest.raises(lockd.LockdConnectionError):
        c.try_acquire("other")
    assert c.release(lease) is True


def test_a_token_is_offered_and_lockd_without_auth_lets_it_be(
        server, monkeypatch):
    # lockd does not implement --auth yet: it answers AUTH with ERR BADREQ
    # (protocol v2: "With --auth off, AUTH is ERR BADREQ"), and the client
    # then goes on unauthenticated.
    monkeypatch.setenv("LOCKD_TOKEN", "s3cret")
    c = client(server)
    assert c.options.token == "s3cret"
    assert c.ping() and c.principal is None
    assert lockd.Client(port=server.port, use_env_token=False).options.token \
        is None


# ---- every ERR code this lockd can give, from lockd itself ---------------
def raw(c, line, kind="PING"):
    req = _proto.Request(kind, None, line)
    return c._call(req)


def test_err_badreq_and_badarg_and_toolong(server):
    c = client(server)
    with pytest.raises(lockd.BadRequestError):
        raw(c, "FROB x\n")
    with pytest.raises(lockd.BadArgumentError):
        raw(c, "TRY x lease=-5\n", "TRY")
    with pytest.raises(lockd.TooLongError):
        raw(c, "STATUS " + "x" * 5000 + "\n", "STATUS")
    assert c.ping()


def test_err_limit(make_lockd):
    server = make_lockd("--max-held", "1")
    c = client(server)
    c.try_acquire("one")
    with pytest.raises(lockd.LimitError):
        c.try_acquire("two")


def test_err_shutdown_for_a_waiter(server):
    a, b = client(server), client(server)
    a.acquire("s")
    errors = []

    def wait():
        try:
            b.acquire("s", wait=10)
        except lockd.LockdError as e:
            errors.append(e)
    t = threading.Thread(target=wait)
    t.start()
    assert wait_for(lambda: a.status("s").queue == 1, 5)
    server.stop()
    t.join(10)
    assert errors and isinstance(errors[0], lockd.ShutdownError)


def test_err_unavailable_from_a_failing_store(make_lockd):
    server = make_lockd(binary=faulty_bin(), env={"LOCKD_FAULT": "fail:1"})
    c = client(server)
    with pytest.raises(lockd.UnavailableError):
        c.try_acquire("u")
    assert c.try_acquire("u") is not None  # the next commit works


def test_the_package_installs_with_pip(tmp_path):
    # pip install client/python, offline, with Debian's setuptools; from a
    # copy, so the build leaves nothing in the tree.
    import shutil
    import subprocess
    import sys
    src = tmp_path / "src"
    shutil.copytree(os.path.join(os.path.dirname(__file__), ".."), src,
                    ignore=shutil.ignore_patterns("__pycache__", "tests"))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    "--no-build-isolation", "--no-index", "--no-deps",
                    "--disable-pip-version-check", "--target", str(target),
                    str(src)], check=True, timeout=120)
    out = subprocess.run(
        [sys.executable, "-c", "import lockd; print(lockd.__file__,"
         " lockd.Client, lockd.AsyncClient)"],
        env={**os.environ, "PYTHONPATH": str(target)}, cwd=str(tmp_path),
        capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.startswith(str(target))
