"""TLS, tokens and cluster endpoints, against the real lockd.

TLS: lockd with --tls-cert and --tls-key (and --tls-client-ca), with a
CA, a server and a client certificate made here by openssl, and a CA
that signed nothing lockd trusts.  Tokens: lockd with --auth and a rules
file holding the tokens' SHA-256.  Cluster mode: one real etcd member
(Debian's etcd-server, ETCD_BIN overrides) and two lockd nodes with
--etcd; the client starts at the follower and is sent on to the leader
by ERR NOTLEADER leader=..., and moves on when the leader dies
(test_failover.py has 3 etcd members and 3 nodes).
"""

import asyncio
import hashlib
import os
import shutil
import signal
import ssl
import subprocess
import time
import urllib.request

import pytest

import lockd
from conftest import free_port, wait_for

TIMEOUTS = {"connect_timeout": 5, "command_timeout": 5}


# ---- certificates and rules ------------------------------------------------
def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, timeout=60,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.fail("openssl is missing: tools/deps.sh test installs it")
    d = tmp_path_factory.mktemp("certs")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
          "-nodes"]
    for ca in ("ca", "other"):
        openssl("req", "-x509", *ec, "-keyout", f"{ca}.key", "-out",
                f"{ca}.pem", "-days", "2", "-subj", f"/CN={ca}", cwd=d)
    for name, cn, ca, ext in (
            ("server", "server", "ca",
             "subjectAltName=IP:127.0.0.1,DNS:localhost"),
            ("alice", "alice", "ca", "extendedKeyUsage=clientAuth"),
            ("mallory", "alice", "other", "extendedKeyUsage=clientAuth")):
        openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={cn}", cwd=d)
        (d / f"{name}.ext").write_text(ext + "\n")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem",
                "-CAkey", f"{ca}.key", "-CAcreateserial", "-out",
                f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext",
                cwd=d)
    # Tokens are stored as their SHA-256 only (docs/security.md).
    rules = [("ops", "s3cret", "lock,read,admin", "ops/"),
             ("app", "t0ken", "lock,read", "app/")]
    (d / "auth").write_text(
        "".join(f"{who} {hashlib.sha256(tok.encode()).hexdigest()} "
                f"{perms} {prefix}\n" for who, tok, perms, prefix in rules)
        + "alice - lock,read alice/\n")
    return d


@pytest.fixture(autouse=True)
def no_env_token(monkeypatch):
    monkeypatch.delenv("LOCKD_TOKEN", raising=False)


def tls_lockd(make_lockd, certs, *extra):
    return make_lockd("--tls-cert", str(certs / "server.pem"),
                      "--tls-key", str(certs / "server.key"), *extra)


# ---- TLS -------------------------------------------------------------------
def test_tls_to_a_real_lockd(make_lockd, certs):
    server = tls_lockd(make_lockd, certs)
    c = lockd.Client(port=server.port, tls_ca_file=str(certs / "ca.pem"),
                     **TIMEOUTS)
    with c.lock("over/tls", lease="1m") as lease:
        assert isinstance(c._sock, ssl.SSLSocket)
        assert c._sock.version() in ("TLSv1.2", "TLSv1.3")
        assert c.status("over/tls").fence == lease.fence
    assert not c.status("over/tls").held
    # By name: localhost is in the certificate too.
    assert lockd.Client("localhost", server.port,
                        tls_ca_file=str(certs / "ca.pem"), **TIMEOUTS).ping()
    c.close()


def test_tls_refuses_a_server_it_cannot_verify(make_lockd, certs):
    server = tls_lockd(make_lockd, certs)
    c = lockd.Client(port=server.port, tls_ca_file=str(certs / "other.pem"),
                     **TIMEOUTS)
    with pytest.raises(lockd.LockdConnectionError) as e:
        c.ping()
    assert "certificate" in str(e.value).lower()
    wrong_name = lockd.Client(port=server.port,
                              tls_ca_file=str(certs / "ca.pem"),
                              tls_server_name="elsewhere.example", **TIMEOUTS)
    with pytest.raises(lockd.LockdConnectionError):
        wrong_name.ping()
    # A plain client on the TLS port gets an end, not a reply.
    plain = lockd.Client(port=server.port, **TIMEOUTS)
    with pytest.raises(lockd.LockdConnectionError):
        plain.ping()


def test_tls_client_certificate_is_the_principal(make_lockd, certs):
    server = tls_lockd(make_lockd, certs, "--tls-client-ca",
                       str(certs / "ca.pem"), "--auth", str(certs / "auth"))

    def client(name=None):
        return lockd.Client(
            port=server.port, tls_ca_file=str(certs / "ca.pem"),
            tls_cert_file=name and str(certs / f"{name}.pem"),
            tls_key_file=name and str(certs / f"{name}.key"), **TIMEOUTS)
    c = client("alice")
    lease = c.acquire("alice/job", lease="1m")
    with pytest.raises(lockd.DeniedError):
        c.try_acquire("ops/job")
    assert c.release(lease)
    c.close()
    # No certificate, or one from another CA: the server ends it.
    for name in (None, "mallory"):
        with pytest.raises(lockd.LockdConnectionError):
            client(name).ping()


def test_a_missing_client_certificate_is_named(make_lockd, certs,
                                              monkeypatch):
    """Issue 25, item 6: lockd with --tls-client-ca ends a client that
    shows no certificate with a TLS alert, after a TLS 1.3 handshake;
    the error says what is missing, blocking and asyncio alike."""
    server = tls_lockd(make_lockd, certs, "--tls-client-ca",
                       str(certs / "ca.pem"), "--auth", str(certs / "auth"))
    monkeypatch.setenv("LOCKD_TOKEN", "s3cret")
    c = lockd.Client(port=server.port, tls_ca_file=str(certs / "ca.pem"),
                     **TIMEOUTS)
    with pytest.raises(lockd.LockdConnectionError) as e:
        c.ping()
    assert "requires a client certificate" in str(e.value)
    assert "tls_cert_file" in str(e.value)

    async def main():
        a = lockd.AsyncClient(port=server.port,
                              tls_ca_file=str(certs / "ca.pem"), **TIMEOUTS)
        with pytest.raises(lockd.LockdConnectionError) as e:
            await a.ping()
        await a.close()
        return str(e.value)
    assert "requires a client certificate" in asyncio.run(
        asyncio.wait_for(main(), 30))


def test_asyncio_over_tls_with_a_client_certificate(make_lockd, certs):
    server = tls_lockd(make_lockd, certs, "--tls-client-ca",
                       str(certs / "ca.pem"), "--auth", str(certs / "auth"))

    async def main():
        async with lockd.AsyncClient(
                port=server.port, tls_ca_file=str(certs / "ca.pem"),
                tls_cert_file=str(certs / "alice.pem"),
                tls_key_file=str(certs / "alice.key"), **TIMEOUTS) as c:
            async with c.lock("alice/async", lease="1m") as lease:
                assert (await c.status("alice/async")).fence == lease.fence
            with pytest.raises(lockd.DeniedError):
                await c.try_acquire("app/async")
        bare = lockd.AsyncClient(port=server.port,
                                 tls_ca_file=str(certs / "other.pem"),
                                 **TIMEOUTS)
        with pytest.raises(lockd.LockdConnectionError):
            await bare.ping()
        await bare.close()
    asyncio.run(asyncio.wait_for(main(), 30))


# ---- tokens ----------------------------------------------------------------
def test_auth_with_a_token_from_the_environment(make_lockd, certs,
                                                monkeypatch):
    server = tls_lockd(make_lockd, certs, "--auth", str(certs / "auth"))
    monkeypatch.setenv("LOCKD_TOKEN", "s3cret")
    c = lockd.Client(port=server.port, tls_ca_file=str(certs / "ca.pem"),
                     **TIMEOUTS)
    assert not c.status("ops/x").held
    assert c.principal == "ops"
    with c.lock("ops/x", lease="1m"):
        assert c.status("ops/x").held
    with pytest.raises(lockd.DeniedError):
        c.try_acquire("app/x")
    # Refused, the connection lives on.
    assert c.ping()
    c.close()


def test_auth_with_a_token_file_and_a_denied_token(make_lockd, certs,
                                                   tmp_path):
    server = make_lockd("--auth", str(certs / "auth"))
    f = tmp_path / "token"
    f.write_text("t0ken\n")
    os.chmod(f, 0o600)
    c = lockd.Client(port=server.port, token_file=str(f), **TIMEOUTS)
    assert c.try_acquire("app/x") and c.principal == "app"
    c.close()
    f.write_text("t0keN\n")
    with pytest.raises(lockd.DeniedError):
        lockd.Client(port=server.port, token_file=str(f), **TIMEOUTS).ping()
    with pytest.raises(lockd.DeniedError):   # no token at all
        lockd.Client(port=server.port, **TIMEOUTS).status("app/x")

    async def main():
        good = tmp_path / "good"
        good.write_text("t0ken\n")
        async with lockd.AsyncClient(port=server.port, token_file=str(good),
                                     **TIMEOUTS) as a:
            assert (await a.status("app/y")).held is False
            assert a.principal == "app"
            with pytest.raises(lockd.DeniedError):
                await a.status("ops/y")
        bad = lockd.AsyncClient(port=server.port, token_file=str(f),
                                **TIMEOUTS)
        with pytest.raises(lockd.DeniedError):
            await bad.ping()
        await bad.close()
    asyncio.run(asyncio.wait_for(main(), 30))


# ---- cluster mode: one etcd member, two lockd nodes -------------------------
def etcd_bin():
    path = os.environ.get("ETCD_BIN") or "/usr/bin/etcd"
    if not os.access(path, os.X_OK):
        pytest.fail(f"no etcd at {path}: tools/deps.sh test installs "
                    "etcd-server, or set ETCD_BIN")
    return path


@pytest.fixture(scope="module")
def etcd(tmp_path_factory):
    d = tmp_path_factory.mktemp("etcd")
    client, peer = free_port(), free_port()
    curl, purl = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
    with open(d / "etcd.log", "wb") as log:
        proc = subprocess.Popen(
            [etcd_bin(), "--name", "m0", "--data-dir", str(d / "m0"),
             "--listen-client-urls", curl, "--advertise-client-urls", curl,
             "--listen-peer-urls", purl,
             "--initial-advertise-peer-urls", purl,
             "--initial-cluster", f"m0={purl}",
             "--initial-cluster-state", "new",
             "--initial-cluster-token", str(d)],
            stdout=log, stderr=log)

    def healthy():
        try:
            with urllib.request.urlopen(curl + "/health", timeout=1) as r:
                return b'"health":"true"' in r.read()
        except OSError:
            return proc.poll() is not None
    try:
        if not wait_for(healthy, 15, 0.1) or proc.poll() is not None:
            pytest.fail("etcd did not start: "
                        + (d / "etcd.log").read_text()[-2000:])
        yield curl
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)


def role(server):
    try:
        return lockd.Client(port=server.port,
                            **TIMEOUTS).stats().get("role")
    except lockd.LockdError:
        return None


def start_cluster(make_lockd, etcd, *extra, role_of=None):
    """Two nodes of a cluster of its own name: (leader, follower)."""
    role_of = role_of or role
    name = f"py{free_port()}"
    nodes = [make_lockd("--etcd", etcd, "--cluster", name, *extra)
             for _ in "ab"]
    assert wait_for(lambda: sorted(role_of(n) or "" for n in nodes) ==
                    ["follower", "leader"], 15, 0.1)
    leader = next(n for n in nodes if role_of(n) == "leader")
    return leader, next(n for n in nodes if n is not leader)


@pytest.fixture
def cluster(make_lockd, etcd):
    return start_cluster(make_lockd, etcd)


def hint_of(follower):
    """What the follower's NOTLEADER names (None: no leader known); a
    pipeline does not follow it."""
    c = lockd.Client(port=follower.port, **TIMEOUTS)
    try:
        hint, = c.pipeline().status("x").execute()
    finally:
        c.close()
    return hint.leader if isinstance(hint, lockd.NotLeaderError) else None


def test_notleader_is_followed_to_the_leader(cluster):
    leader, follower = cluster
    # The follower learns the leader's address from etcd after it knows
    # its own role ("no leader is known" until then): wait for it, bounded.
    assert wait_for(lambda: hint_of(follower) == ("127.0.0.1", leader.port),
                    15, 0.05)
    # A pipeline does not follow: it shows the follower's answer.
    c = lockd.Client(port=follower.port, **TIMEOUTS)
    p = c.pipeline()
    p.status("x")
    p.ping()
    hint, pong = p.execute()
    assert isinstance(hint, lockd.NotLeaderError) and pong is True
    assert hint.leader == ("127.0.0.1", leader.port)
    c.close()
    eps = [f"127.0.0.1:{follower.port}", f"127.0.0.1:{leader.port}"]
    c = lockd.Client(endpoints=eps, **TIMEOUTS)
    with c.lock("cluster/job", lease="1m") as lease:
        assert c.endpoint == ("127.0.0.1", leader.port)
        assert lockd.Client(port=leader.port, **TIMEOUTS).status(
            "cluster/job").fence == lease.fence
    c.close()

    async def main():
        a = lockd.AsyncClient(endpoints=eps, **TIMEOUTS)
        lease = await a.acquire("cluster/async")
        assert a.endpoint == ("127.0.0.1", leader.port)
        assert await a.release(lease)
        await a.close()
    asyncio.run(asyncio.wait_for(main(), 30))


def test_notleader_is_followed_over_tls_with_a_token(make_lockd, etcd,
                                                    certs):
    # Every node with TLS and --auth: following the hint is a new
    # handshake, checked against the CA, and a new AUTH.
    f = certs / "ops.token"
    f.write_text("s3cret\n")
    tls = {"tls_ca_file": str(certs / "ca.pem"), "token_file": str(f),
           **TIMEOUTS}

    def tls_role(server):
        try:
            return lockd.Client(port=server.port, **tls).stats().get("role")
        except lockd.LockdError:
            return None
    leader, follower = start_cluster(
        make_lockd, etcd, "--tls-cert", str(certs / "server.pem"),
        "--tls-key", str(certs / "server.key"), "--auth",
        str(certs / "auth"), role_of=tls_role)
    c = lockd.Client(endpoints=[f"127.0.0.1:{follower.port}",
                                f"127.0.0.1:{leader.port}"], **tls)
    with c.lock("ops/cluster", lease="1m") as lease:
        assert c.endpoint == ("127.0.0.1", leader.port)
        assert c.principal == "ops"
        assert c.check("ops/cluster", lease.fence)
    with pytest.raises(lockd.DeniedError):
        c.try_acquire("app/cluster")
    c.close()


def test_notleader_without_a_leader_moves_to_the_next_endpoint(cluster):
    leader, follower = cluster
    c = lockd.Client(endpoints=[f"127.0.0.1:{follower.port}",
                                f"127.0.0.1:{leader.port}"], **TIMEOUTS)
    assert c.ping() and c.endpoint == ("127.0.0.1", follower.port)
    # What a node answers while no leader is known (an election on), in
    # lockd's words; lockd cannot be made to say it on cue, so the reply
    # is handed to the client's rule here, and the next call goes on.
    err = lockd.errors.error_from_reply("ERR NOTLEADER no leader is known")
    assert err.leader is None
    c._follow(err)
    lease = c.acquire("cluster/next", lease="1m")
    assert c.endpoint == ("127.0.0.1", leader.port) and c.release(lease)
    c.close()
    # One endpoint only: fail-over is off, the error is the caller's.
    c = lockd.Client(port=follower.port, **TIMEOUTS)
    with pytest.raises(lockd.NotLeaderError) as e:
        c.acquire("cluster/next")
    assert e.value.leader == ("127.0.0.1", leader.port)
    c.close()


def test_a_dead_leader_is_left_for_the_new_one(cluster):
    leader, follower = cluster
    c = lockd.Client(endpoints=[f"127.0.0.1:{leader.port}",
                                f"127.0.0.1:{follower.port}"], **TIMEOUTS)
    first = c.acquire("cluster/failover", lease="1m")
    assert c.endpoint == ("127.0.0.1", leader.port)
    leader.kill()

    def served():
        try:
            return c.status("cluster/failover").held
        except (lockd.NotLeaderError, lockd.LockdConnectionError,
                lockd.UnavailableError):
            return False
    # The follower takes over once the old leader's etcd lease ends; the
    # lease granted before lives on, its fence with it.
    assert wait_for(served, 30, 0.2)
    assert c.endpoint == ("127.0.0.1", follower.port)
    assert c.status("cluster/failover").fence == first.fence
    second = c.acquire("cluster/after", lease="1m")
    assert second.fence > first.fence
    c.close()


def test_a_rotated_token_file_is_read_at_the_next_connect(make_lockd, certs,
                                                          tmp_path):
    # docs/security.md's rotation: both tokens in the rules, the clients'
    # file rewritten, the old token's line removed, SIGHUP.  A client
    # that reconnects after that must send the token the file holds now.
    rules = tmp_path / "auth"
    rules.write_text((certs / "auth").read_text())
    server = make_lockd("--auth", str(rules))
    f = tmp_path / "token"
    f.write_text("t0ken\n")
    c = lockd.Client(port=server.port, token_file=str(f), **TIMEOUTS)
    assert c.try_acquire("app/rotate") and c.principal == "app"
    new = "n3w-t0ken"
    rules.write_text(
        f"app {hashlib.sha256(new.encode()).hexdigest()} lock,read app/\n")
    f.write_text(new + "\n")
    server.proc.send_signal(signal.SIGHUP)

    def reloaded():
        try:
            return lockd.Client(port=server.port, token_file=str(f),
                                **TIMEOUTS).ping()
        except lockd.DeniedError:       # the old rules, still
            return False
    assert wait_for(reloaded, 5, 0.1)
    c.close()
    assert c.status("app/rotate").held and c.principal == "app"

    async def main():
        a = lockd.AsyncClient(port=server.port, token_file=str(f),
                              **TIMEOUTS)
        f.write_text("t0ken\n")          # the old one: refused now
        with pytest.raises(lockd.DeniedError):
            await a.ping()
        f.write_text(new + "\n")
        assert await a.ping()
        await a.close()
    asyncio.run(asyncio.wait_for(main(), 30))


def test_a_kept_alive_lease_rides_out_a_leader_failover(cluster):
    leader, follower = cluster
    eps = [f"127.0.0.1:{leader.port}", f"127.0.0.1:{follower.port}"]
    c = lockd.Client(endpoints=eps, **TIMEOUTS)
    lost = []
    with c.lock("cluster/kept", lease="6s",
                on_lost=lambda lease, e: lost.append(e)) as lease:
        first_end = time.monotonic() + 6
        leader.kill()
        # The new leader answers NOTLEADER, then serves: a renewal there
        # carries the lease past the end it had when the leader died.
        watcher = lockd.Client(port=follower.port, **TIMEOUTS)

        def renewed_there():
            try:
                st = watcher.status("cluster/kept")
            except (lockd.NotLeaderError, lockd.UnavailableError):
                return False
            return st.held and time.monotonic() + st.ttl_ms / 1000 > \
                first_end + 1
        assert wait_for(renewed_there, 20, 0.2)
        assert not lost and not lease.lost
        assert watcher.status("cluster/kept").fence == lease.fence
        watcher.close()
    c.close()


def test_an_asyncio_kept_alive_lease_rides_out_a_leader_failover(cluster):
    leader, follower = cluster
    eps = [f"127.0.0.1:{leader.port}", f"127.0.0.1:{follower.port}"]

    async def main():
        async with lockd.AsyncClient(endpoints=eps, **TIMEOUTS) as a, \
                lockd.AsyncClient(port=follower.port, **TIMEOUTS) as w:
            async with a.lock("cluster/async-kept", lease="6s") as lease:
                first_end = time.monotonic() + 6
                leader.kill()
                end = time.monotonic() + 20
                while time.monotonic() < end:
                    try:
                        st = await w.status("cluster/async-kept")
                        if st.held and time.monotonic() + \
                                st.ttl_ms / 1000 > first_end + 1:
                            break
                    except (lockd.NotLeaderError, lockd.UnavailableError):
                        pass
                    await asyncio.sleep(0.2)
                else:
                    pytest.fail("the lease was not renewed on the new leader")
                assert not lease.lost and st.fence == lease.fence
    asyncio.run(asyncio.wait_for(main(), 40))
