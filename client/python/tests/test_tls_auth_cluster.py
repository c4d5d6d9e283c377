"""TLS, tokens and cluster endpoints.

TLS runs for real: lockd does not speak TLS yet (protocol v2's
--tls-cert is not built), so the test puts socat's OPENSSL-LISTEN in
front of a real lockd, with a CA, a server and a client certificate
made here by openssl, and the client talks TLS 1.2+ to socat.

AUTH and NOTLEADER have nothing real to answer them: lockd implements
neither --auth nor cluster mode yet (it answers AUTH with ERR BADREQ,
test_sync covers that).  So their reply handling is checked against
FakeNode below, a few lines that answer exactly as protocol v2 says - a
stand-in until the server side exists, not a model of lockd.  Where the
fake redirects (NOTLEADER leader=...), it points at a real lockd, which
then does the locking.
"""

import asyncio
import os
import shutil
import socket
import socketserver
import ssl
import subprocess
import threading
import time

import pytest

import lockd
from conftest import free_port


# ---- TLS through socat -----------------------------------------------------
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
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=lockd test CA", cwd=d)
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
                      ("client", "extendedKeyUsage=clientAuth")):
        openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={name}", cwd=d)
        (d / f"{name}.ext").write_text(ext + "\n")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem",
                "-CAkey", "ca.key", "-CAcreateserial", "-out",
                f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext",
                cwd=d)
    # A second CA the server's certificate does not chain to.
    openssl("req", "-x509", *ec, "-keyout", "other.key", "-out",
            "other.pem", "-days", "2", "-subj", "/CN=another CA", cwd=d)
    return d


def start_socat(certs, lockd_port, verify):
    if shutil.which("socat") is None:
        pytest.fail("socat is missing: tools/deps.sh test installs it")
    port = free_port()
    proc = subprocess.Popen(
        ["socat", f"OPENSSL-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork,"
         f"cert={certs / 'server.pem'},key={certs / 'server.key'},"
         f"cafile={certs / 'ca.pem'},verify={1 if verify else 0},"
         "openssl-min-proto-version=TLS1.2",
         f"TCP:127.0.0.1:{lockd_port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc, port
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    proc.kill()
    pytest.fail("socat did not start")


@pytest.fixture
def tls_front(certs, server):
    procs = []

    def start(verify=False):
        proc, port = start_socat(certs, server.port, verify)
        procs.append(proc)
        return port
    yield start
    for proc in procs:
        proc.kill()
        proc.wait(10)


def test_tls_to_a_real_lockd_behind_socat(certs, tls_front):
    port = tls_front()
    c = lockd.Client(port=port, tls_ca_file=str(certs / "ca.pem"),
                     connect_timeout=5, command_timeout=5)
    with c.lock("over/tls", lease="1m") as lease:
        assert isinstance(c._sock, ssl.SSLSocket)
        assert c._sock.version() in ("TLSv1.2", "TLSv1.3")
        assert c.status("over/tls").fence == lease.fence
    assert not c.status("over/tls").held


def test_tls_with_a_client_certificate(certs, tls_front):
    port = tls_front(verify=True)
    c = lockd.Client(port=port, tls_ca_file=str(certs / "ca.pem"),
                     tls_cert_file=str(certs / "client.pem"),
                     tls_key_file=str(certs / "client.key"),
                     connect_timeout=5, command_timeout=5)
    assert c.ping()
    # Without one, socat (standing in for --tls-client-ca) ends the
    # handshake or the connection.
    bare = lockd.Client(port=port, tls_ca_file=str(certs / "ca.pem"),
                        connect_timeout=5, command_timeout=5)
    with pytest.raises(lockd.LockdConnectionError):
        bare.ping()


def test_tls_refuses_a_server_of_another_ca(certs, tls_front):
    port = tls_front()
    c = lockd.Client(port=port, tls_ca_file=str(certs / "other.pem"),
                     connect_timeout=5)
    with pytest.raises(lockd.LockdConnectionError) as e:
        c.ping()
    assert "certificate" in str(e.value).lower()
    wrong_name = lockd.Client(port=port, tls_ca_file=str(certs / "ca.pem"),
                              tls_server_name="elsewhere.example",
                              connect_timeout=5)
    with pytest.raises(lockd.LockdConnectionError):
        wrong_name.ping()


def test_asyncio_over_tls(certs, tls_front):
    port = tls_front(verify=True)

    async def main():
        async with lockd.AsyncClient(
                port=port, tls_ca_file=str(certs / "ca.pem"),
                tls_cert_file=str(certs / "client.pem"),
                tls_key_file=str(certs / "client.key"),
                connect_timeout=5, command_timeout=5) as c:
            async with c.lock("async/tls", lease="1m") as lease:
                assert (await c.status("async/tls")).fence == lease.fence
    asyncio.run(asyncio.wait_for(main(), 30))


# ---- the stand-in for AUTH and cluster mode -------------------------------
class FakeNode(socketserver.ThreadingTCPServer):
    """Answers as protocol v2 says a node with --auth, or a follower in
    cluster mode, does.  tokens: {token: principal}; leader: "host:port"
    for NOTLEADER, "" for NOTLEADER without one, None for no cluster."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, tokens=None, leader=None):
        self.tokens = tokens
        self.leader = leader
        self.seen = []
        super().__init__(("127.0.0.1", 0), FakeHandler)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def close(self):
        self.shutdown()
        self.server_close()


class FakeHandler(socketserver.StreamRequestHandler):
    def handle(self):
        node = self.server
        principal = None
        for raw in self.rfile:
            words = raw.decode().split()
            if not words:
                continue
            cmd = words[0].upper()
            node.seen.append(cmd)
            if cmd == "AUTH" and node.tokens is not None:
                if len(words) == 2 and words[1] in node.tokens:
                    principal = node.tokens[words[1]]
                    reply = f"AUTHED {principal}"
                else:
                    reply = "ERR DENIED bad token"
            elif cmd == "PING":
                reply = "PONG"
            elif node.leader is not None:
                reply = ("ERR NOTLEADER " + (f"leader={node.leader} "
                                             if node.leader else "")
                         + "not the leader")
            elif node.tokens is not None and principal is None:
                reply = "ERR DENIED not authenticated"
            else:
                reply = f"STATUS {words[1]} held=0 fence=0 ttl=0 queue=0"
            self.wfile.write(reply.encode() + b"\r\n")


@pytest.fixture
def fake():
    nodes = []

    def make(**kw):
        node = FakeNode(**kw)
        nodes.append(node)
        return node
    yield make
    for node in nodes:
        node.close()


def test_auth_with_a_token_from_the_environment(fake, monkeypatch):
    node = fake(tokens={"s3cret": "alice"})
    monkeypatch.setenv("LOCKD_TOKEN", "s3cret")
    c = lockd.Client(port=node.port, command_timeout=5)
    assert not c.status("x").held
    assert c.principal == "alice" and node.seen[:2] == ["AUTH", "STATUS"]


def test_auth_with_a_token_file_and_a_denied_token(fake, tmp_path,
                                                    monkeypatch):
    monkeypatch.delenv("LOCKD_TOKEN", raising=False)
    node = fake(tokens={"from-file": "bob"})
    f = tmp_path / "token"
    f.write_text("from-file\n")
    os.chmod(f, 0o600)
    assert lockd.Client(port=node.port, token_file=str(f)).status("x")
    f.write_text("wrong\n")
    with pytest.raises(lockd.DeniedError):
        lockd.Client(port=node.port, token_file=str(f)).ping()
    with pytest.raises(lockd.DeniedError):   # no token at all
        lockd.Client(port=node.port).status("x")

    async def main():
        good = tmp_path / "good"
        good.write_text("from-file\n")
        async with lockd.AsyncClient(port=node.port,
                                     token_file=str(good)) as c:
            assert not (await c.status("y")).held and c.principal == "bob"
        with pytest.raises(lockd.DeniedError):
            await lockd.AsyncClient(port=node.port,
                                    token_file=str(f)).ping()
    asyncio.run(asyncio.wait_for(main(), 30))


def test_notleader_is_followed_to_the_leader(fake, server):
    follower = fake(leader=f"127.0.0.1:{server.port}")
    c = lockd.Client(endpoints=[f"127.0.0.1:{follower.port}"],
                     connect_timeout=2, command_timeout=5)
    with c.lock("cluster/job", lease="1m") as lease:
        assert c.endpoint == ("127.0.0.1", server.port)
        assert lockd.Client(port=server.port).status(
            "cluster/job").fence == lease.fence
    assert "ACQUIRE" in follower.seen

    async def main():
        a = lockd.AsyncClient(endpoints=[f"127.0.0.1:{follower.port}"],
                              command_timeout=5)
        lease = await a.acquire("cluster/async")
        assert a.endpoint == ("127.0.0.1", server.port)
        assert await a.release(lease)
        await a.close()
    asyncio.run(asyncio.wait_for(main(), 30))


def test_notleader_without_a_leader_moves_to_the_next_endpoint(fake, server):
    lost = fake(leader="")
    c = lockd.Client(endpoints=[f"127.0.0.1:{lost.port}",
                                f"127.0.0.1:{server.port}"],
                     connect_timeout=2, command_timeout=5)
    lease = c.acquire("cluster/next")
    assert c.endpoint == ("127.0.0.1", server.port) and c.release(lease)
    # One node only, and it knows no leader: the error is the caller's.
    with pytest.raises(lockd.NotLeaderError) as e:
        lockd.Client(port=lost.port).status("x")
    assert e.value.leader is None
    # Never more than a few hops between nodes that point at each other.
    a = fake(leader="")
    b = fake(leader="")
    t0 = time.monotonic()
    with pytest.raises(lockd.NotLeaderError):
        lockd.Client(endpoints=[f"127.0.0.1:{a.port}",
                                f"127.0.0.1:{b.port}"]).status("x")
    assert time.monotonic() - t0 < 5
