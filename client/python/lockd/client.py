"""The blocking client: Client, its Pipeline, the KeepAlive thread and the
lock() context manager.

Shaped like liblockd: a blocking call sends one request and reads its
reply; a pipeline sends many and reads their replies, which lockd writes
in request order.  A connection error closes the connection and is
raised; the next call connects again.  The keep-alive renews on a thread
with a connection of its own, so it never touches the caller's.
"""

import collections
import socket
import threading
import time
import traceback

from . import _proto
from ._options import Options
from .errors import (BadRequestError, CommandTimeoutError,
                     ConnectionClosedError, LeaseLostError, LimitError,
                     LockdConnectionError, LockdError, NotLeaderError,
                     ProtocolError, ServerError, UnavailableError)

__all__ = ["Client", "Pipeline", "KeepAlive", "LockContext"]


def _left(deadline):
    # Never 0: socket.settimeout(0) would mean non-blocking, not "late".
    return None if deadline is None else \
        max(0.001, deadline - _proto.now())


def _earliest(a, b):
    if a is None:
        return b
    return a if b is None else min(a, b)


class Client:
    """A connection to lockd (made on first use).

    Where: ``host``/``port`` (default 127.0.0.1:7420), or ``unix_path``,
    or ``endpoints``, a list of cluster nodes (liblockd's syntax:
    "host:port", "[v6]:port", "unix:/path", "lockd://host:port",
    "lockds://host:port"; a comma-separated string, or ``host`` with
    commas, too; at most 16) tried in order.

    Fail-over (``failover_timeout``, seconds: 10 with several endpoints,
    off with one): a call answered ``ERR NOTLEADER leader=host:port`` is
    sent again to that leader when it is one of the endpoints (never to
    an address nobody configured), else to the next endpoint; one whose
    connection broke or timed out is sent to the next endpoint when it
    is safe to repeat (ACQUIRE and TRY then carry a fresh ``rid``), until
    the fail-over time or 64 attempts are used up.

    ``connect_timeout`` and ``command_timeout`` (seconds, or a duration
    string such as "2s"; None: no timeout of our own) bound connecting
    and how late a reply may be: an ACQUIRE's reply is given its ``wait``
    plus the command timeout, one that waits forever has none.

    TLS: ``tls=True`` (or any of ``tls_ca_file``, ``tls_cert_file`` and
    ``tls_key_file``, or your own ``ssl_context``) wraps TCP connections
    in TLS 1.2 or later, checking the server's certificate against the
    CA file (else the system's CAs) and ``tls_server_name`` (else the
    host).  A token is read from ``token_file`` (its first line, read
    again at every connect, so that a rotated file is picked up), else
    from the LOCKD_TOKEN environment variable (unless
    ``use_env_token=False``), and sent as ``AUTH <token>`` first on every
    connection.

    A Client may be shared by threads: calls take turns.
    """

    def __init__(self, host=None, port=None, *, options=None, **kw):
        self.options = options if options is not None else \
            Options(host, port, **kw)
        self._endpoints = list(self.options.endpoints)
        self._preferred = 0
        self._sock = None
        self._rbuf = bytearray()
        self._lock = threading.RLock()
        self.endpoint = None     # the endpoint connected to
        self.principal = None    # AUTHED's principal, when authenticated
        self._interrupted = False

    # ---- connections ---------------------------------------------------
    def connect(self, deadline=None):
        """Connects (again): the first endpoint, from the last good one
        on, that accepts.  Raises LockdConnectionError when none does,
        DeniedError when the server refuses the token."""
        with self._lock:
            self.close()
            errors = []
            n = len(self._endpoints)
            for i in range(n):
                idx = (self._preferred + i) % n
                ep = self._endpoints[idx]
                try:
                    self._open(ep, deadline)
                except (OSError, CommandTimeoutError) as e:
                    errors.append(f"{_proto.endpoint_text(ep)}:"
                                  f" {_proto.io_error_text(e)}")
                    continue
                self._preferred = idx
                self.endpoint = ep
                break
            else:
                raise LockdConnectionError(
                    "cannot connect to lockd: " + "; ".join(errors))
            token = self.options.token    # the file as it is now
            if token:
                self._authenticate(token, deadline)

    def _open(self, ep, deadline):
        timeout = _earliest(self.options.connect_timeout, _left(deadline))
        if ep[0] == "unix":
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.settimeout(timeout)
                sock.connect(ep[1])
            except BaseException:
                sock.close()
                raise
        else:
            try:
                sock = socket.create_connection(ep, timeout=timeout)
            except socket.timeout:
                raise CommandTimeoutError("connect timed out") from None
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.options.ssl_context is not None:
                try:
                    sock = self.options.ssl_context.wrap_socket(
                        sock, server_hostname=self.options.server_hostname(ep))
                except BaseException:
                    sock.close()
                    raise
        sock.settimeout(None)
        self._sock = sock
        self._rbuf.clear()

    def _authenticate(self, token, deadline):
        req = _proto.req_auth(token)
        result = self._exchange(req, deadline)
        if isinstance(result, BadRequestError):
            # lockd runs without --auth: AUTH is an unknown command there,
            # and every command is allowed.
            self.principal = None
        elif isinstance(result, ServerError):
            self.close()
            raise result
        else:
            self.principal = result

    def close(self):
        """Closes the connection (leases survive unless onclose=release)."""
        with self._lock:
            if self._sock is not None:
                try:
                    self._sock.close()
                except OSError:
                    pass
            self._sock = None
            self._rbuf.clear()
            self.endpoint = None

    def _interrupt(self):
        # From another thread: wake a recv blocked on this connection,
        # and send nothing again.
        self._interrupted = True
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---- the wire ------------------------------------------------------
    def _fail(self, error):
        self.close()
        raise error

    def _send(self, data, deadline):
        try:
            self._sock.settimeout(_left(deadline))
            self._sock.sendall(data)
        except socket.timeout:
            self._fail(CommandTimeoutError("sending to lockd timed out"))
        except OSError as e:
            self._fail(LockdConnectionError(
                f"sending to lockd: {_proto.io_error_text(e)}"))

    def _readline(self, deadline):
        while True:
            i = self._rbuf.find(b"\n")
            if i >= 0:
                line = bytes(self._rbuf[:i])
                del self._rbuf[:i + 1]
                return line[:-1] if line.endswith(b"\r") else line
            if len(self._rbuf) > _proto.REPLY_MAX:
                self._fail(ProtocolError("a reply line is too long"))
            try:
                self._sock.settimeout(_left(deadline))
                chunk = self._sock.recv(65536)
            except socket.timeout:
                self._fail(CommandTimeoutError(
                    "no reply from lockd in time"))
            except OSError as e:
                self._fail(LockdConnectionError(
                    f"reading from lockd: {_proto.io_error_text(e)}"))
            if not chunk:
                self._fail(ConnectionClosedError(
                    "lockd closed the connection"))
            self._rbuf += chunk

    def _reply_deadline(self, req):
        t = self.options.command_timeout
        if t is None or (_proto.may_wait(req) and req.wait_ms is None):
            return None
        return _proto.now() + t + (req.wait_ms or 0) / 1000.0

    def _exchange(self, req, deadline=None):
        req.sent = _proto.now()
        deadline = _earliest(self._reply_deadline(req), deadline)
        self._send(req.line, deadline)
        return self._reply(req, deadline)

    def _reply(self, req, deadline):
        """req's result, from as many lines as its reply has (LIST's)."""
        try:
            result = _proto.MORE
            while result is _proto.MORE:
                result = _proto.parse_reply(req, self._readline(deadline))
            return result
        except ProtocolError as e:
            self._fail(e)

    def _call(self, req, deadline=None):
        """Sends req and returns its result.  Without fail-over, a
        request safe to repeat is sent once more on a new connection when
        the one it went out on was from before and turns out dead (lockd
        restarted).  With fail-over, as liblockd: NOTLEADER is followed
        and a broken connection left, within the fail-over time."""
        with self._lock:
            if not self.options.failover_timeout:
                return self._call_once(req, deadline)
            return self._call_failover(req, deadline)

    def _call_once(self, req, deadline):
        reused = self._sock is not None
        if not reused:
            self.connect(deadline)
        try:
            result = self._exchange(req, deadline)
        except CommandTimeoutError:
            raise
        except LockdConnectionError:
            if not reused or not _proto.repeatable(req):
                raise
            self.connect(deadline)
            result = self._exchange(req, deadline)
        if isinstance(result, ServerError):
            raise result
        return result

    def _call_failover(self, req, deadline):
        search = _proto.FailoverSearch(self.options.failover_timeout,
                                       len(self._endpoints), deadline)
        while True:
            error = None
            began = None
            try:
                if self._sock is None:
                    self.connect(deadline)
            except LockdConnectionError as e:
                # Nothing was sent: safe to try again for any request.
                # (A refused token, DeniedError, is raised here: it is
                # refused everywhere.)
                if self._interrupted:
                    raise
                error = e
                self._next_endpoint()
            if error is None:
                began = _proto.now()
                try:
                    result = self._exchange(req, deadline)
                except LockdConnectionError as e:
                    # Its fate unknown: sent again only when that is safe
                    # (an ACQUIRE or TRY carries a rid: see acquire()).
                    if isinstance(e, ProtocolError) or self._interrupted \
                            or not _proto.repeatable(req):
                        raise
                    error = e
                    self._next_endpoint()
                else:
                    if not isinstance(result, ServerError):
                        return result
                    if not isinstance(result, NotLeaderError):
                        raise result
                    error = result
                    self._follow(result)
            pause = search.pause_after(error, began)
            if pause > 0:
                time.sleep(pause)

    def _next_endpoint(self):
        """The connection broke or stalled: the next one goes to the
        endpoint after the one it was to."""
        self.close()
        self._preferred = (self._preferred + 1) % len(self._endpoints)

    def _follow(self, error):
        """Points the next connection at the leader a NOTLEADER names
        when it is one of the configured endpoints, spelled the same (an
        address from the wire that nobody configured is never connected
        to), else at the next endpoint."""
        self.close()
        self._preferred = _proto.next_endpoint(self._endpoints,
                                               self._preferred, error.leader)

    # ---- commands ------------------------------------------------------
    def acquire(self, name, lease=None, wait=None, onclose="keep", *,
                owner=None, rid=None, delay=None, limit=None, mode=None):
        """Queues for the lock and returns its Lease when granted.

        ``lease``: None for the server's default (30 s; longer ones are
        capped, see ``Lease.lease_ms``).  ``wait``: None to wait until
        granted, 0 to fail at once, else at most that long; when it runs
        out, WaitTimeoutError.  Durations: seconds, or "1500ms", "30s".
        ``onclose="release"`` ends the lease when this connection closes.
        ``owner``: a public label (STATUS, LIST and WATCH show it).
        ``delay``: lock-delay, the time nobody gets the lock after this
        lease ends badly (expiry, onclose, FORCE; never RELEASE).
        ``limit``: a counting semaphore, up to that many holders at once
        (2 to 65535; None or 1: one holder), each with its own fence and
        handle.  ``mode="shared"``: a shared (read) lock, held by any
        number of shared holders together but by an exclusive one alone;
        it takes no limit above 1.  Every request on a name must give
        the same limit while it has holders or waiters (BadArgError
        otherwise).  ``rid``: repeated with the same rid, the request
        returns the grant it already had (with fail-over on, the client
        makes one for every call and repeats it, limit and mode too).
        """
        return self._call(_proto.req_acquire(name, lease, wait, onclose,
                                             owner, self._rid(rid), delay,
                                             limit, mode))

    def try_acquire(self, name, lease=None, onclose="keep", *, owner=None,
                    delay=None, rid=None, limit=None, mode=None):
        """Never queues: the Lease, or None when the lock is taken (or in
        its lock-delay, or its limit is reached, or a writer waits ahead
        of a shared request).  Options as acquire()'s."""
        return self._call(_proto.req_try(name, lease, onclose, owner,
                                         delay, self._rid(rid), limit,
                                         mode))

    def _rid(self, rid):
        # With fail-over, every ACQUIRE and TRY carries a rid, so that
        # sending it again finds the grant it may have had.
        if rid is None and self.options.failover_timeout:
            return _proto.new_rid()
        return rid

    def renew(self, held=None, lease=None, *, length=None):
        """Extends the Lease held to now + ``lease`` (a duration, as in
        acquire(); None: its current length) and returns it, updated.
        ConflictError: it is not ours any more.  (``length=`` is the
        old name of ``lease=``, deprecated.)"""
        return self._call(_proto.req_renew(held, lease, length))

    def release(self, lease):
        """True when released, False when the handle was stale (NOTHELD):
        both are success."""
        return self._call(_proto.req_release(lease))

    def status(self, name):
        """The lock's Status: diagnostics, never a basis to acquire on."""
        return self._call(_proto.req_status(name))

    def ping(self):
        return self._call(_proto.req_ping())

    def stats(self):
        """lockd's STATS line as a dict (numbers as int)."""
        return self._call(_proto.req_stats())

    def list(self, prefix=None, after=None, limit=None):
        """One page of the locks that exist (held, waited for, or in
        lock-delay), in name order: a LockList of Status, whose ``next``
        is the ``after`` of the next page (None: the last page).
        ``limit``: 1 to 1000 (default 100)."""
        return self._call(_proto.req_list(prefix, after, limit))

    def list_all(self, prefix=None):
        """Every lock whose name starts with prefix, a page at a time."""
        after = None
        while True:
            page = self.list(prefix, after, _proto.LIST_LIMIT_MAX)
            yield from page
            if page.next is None:
                return
            after = page.next

    def force(self, name, fence):
        """Ends the lease of name's holder with this fence as if it
        expired (lock-delay applies): True, or False when no live holder
        has it (a newer holder is never touched).  Needs admin."""
        return self._call(_proto.req_force(name, fence))

    def check(self, name, fence):
        """Asks whether fence is a live holder's: a Check, true when
        current, else with the newest holder's fence."""
        return self._call(_proto.req_check(name, fence))

    def watch(self, name, fence=None, wait=None):
        """Waits until the newest holder's fence differs from fence (at
        once if it does), or, without fence, for the next change of the
        holders, and returns the lock's Status with its ``cause``
        (granted, released, expired, closed, forced or none).  ``wait``
        runs out with WaitTimeoutError; None waits as long as it takes.
        A pending WATCH holds back this client's other calls: watch from
        a Client of its own."""
        return self._call(_proto.req_watch(name, fence, wait))

    def pipeline(self):
        return Pipeline(self)

    def keepalive(self, lease, on_lost=None):
        """Starts renewing lease every third of it on a thread of its own;
        see KeepAlive."""
        return KeepAlive(self.options, lease, on_lost).start()

    def lock(self, name, lease=None, wait=None, onclose="keep", *,
             on_lost=None, keepalive=True, owner=None, limit=None,
             mode=None):
        """A context manager: acquires at entry (giving the Lease), keeps
        it alive meanwhile, releases at exit; see LockContext.  limit and
        mode as acquire()'s: one permit of a semaphore, or a read lock."""
        return LockContext(self, name, lease, wait, onclose, on_lost,
                           keepalive, owner, limit, mode)


class Pipeline:
    """Requests sent together, replies read in order.

        p = client.pipeline()
        p.try_acquire("a"); p.status("b"); p.ping()
        lease_a, status_b, pong = p.execute()

    Each method queues one request and returns the pipeline.  execute()
    sends them all (at most 512 ahead of their replies) and returns one
    result per request, in order; a server error stands in its place as
    the exception instance (not raised; NOTLEADER is not followed).  A
    connection error is raised and loses every reply still due.
    """

    def __init__(self, client):
        self._client = client
        self._requests = []

    def _add(self, req):
        self._requests.append(req)
        return self

    def acquire(self, name, lease=None, wait=None, onclose="keep", *,
                owner=None, rid=None, delay=None, limit=None, mode=None):
        return self._add(_proto.req_acquire(name, lease, wait, onclose,
                                            owner, rid, delay, limit, mode))

    def try_acquire(self, name, lease=None, onclose="keep", *, owner=None,
                    delay=None, rid=None, limit=None, mode=None):
        return self._add(_proto.req_try(name, lease, onclose, owner, delay,
                                        rid, limit, mode))

    def renew(self, held=None, lease=None, *, length=None):
        return self._add(_proto.req_renew(held, lease, length))

    def release(self, lease):
        return self._add(_proto.req_release(lease))

    def status(self, name):
        return self._add(_proto.req_status(name))

    def ping(self):
        return self._add(_proto.req_ping())

    def stats(self):
        return self._add(_proto.req_stats())

    def list(self, prefix=None, after=None, limit=None):
        return self._add(_proto.req_list(prefix, after, limit))

    def force(self, name, fence):
        return self._add(_proto.req_force(name, fence))

    def check(self, name, fence):
        return self._add(_proto.req_check(name, fence))

    def __len__(self):
        return len(self._requests)

    def execute(self):
        reqs, self._requests = self._requests, []
        c = self._client
        results = []
        with c._lock:
            if c._sock is None:
                c.connect()
            due = collections.deque()
            sent = 0
            while len(results) < len(reqs):
                # Send what the window allows in one write, then read one.
                batch = []
                while sent < len(reqs) and \
                        len(due) + len(batch) < _proto.PIPELINE_WINDOW:
                    req = reqs[sent]
                    req.sent = _proto.now()
                    batch.append(req)
                    sent += 1
                if batch:
                    due.extend(batch)
                    c._send(b"".join(r.line for r in batch),
                            c._reply_deadline(batch[-1]))
                req = due.popleft()
                results.append(c._reply(req, c._reply_deadline(req)))
        return results


class KeepAlive:
    """Renews a lease every third of its length from a thread of its own,
    over a connection of its own made from the client's options (so a
    restart of lockd is ridden out: it reconnects).

    The lease is lost as soon as a renewal is refused (CONFLICT and the
    like; UNAVAILABLE, LIMIT and NOTLEADER are retried), or when no
    renewal has succeeded by a tenth of the lease before the lease could
    end.  Then
    ``lease.lost_error`` is set (``lease.lost`` turns True,
    ``lease.check()`` raises it) and ``on_lost(lease, error)`` is called
    once, on the keep-alive's thread: keep it short.  ``stop()`` stops
    renewing; it does not release the lease.
    """

    def __init__(self, options, lease, on_lost=None):
        self.lease = lease
        self._on_lost = on_lost
        self._client = Client(options=options)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"lockd-keepalive {lease.name}",
            daemon=True)
        self.renewals = 0
        self.last_error = None   # the last failed attempt, for diagnostics

    def start(self):
        if not self.lease.lease_ms:
            raise ValueError("the lease has no length: renew it once first")
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._client._interrupt()
        self._thread.join()
        self._client.close()
        return self.lease.lost_error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _lose(self, why):
        lease = self.lease
        err = LeaseLostError(f"lease of {lease.name} (fence {lease.fence})"
                             f" lost: {why}")
        lease.lost_error = err
        if self._on_lost is not None:
            try:
                self._on_lost(lease, err)
            except Exception:  # the callback's bug must not hide the loss
                traceback.print_exc()

    def _run(self):
        lease = self.lease
        backoff = 0
        next_at = _proto.renew_at(lease)
        while not self._stop.is_set():
            lost_at = _proto.lost_at(lease)
            if self._stop.wait(max(0.0, next_at - _proto.now())):
                return
            if _proto.now() >= lost_at:
                self._lose("no renewal succeeded in time")
                return
            try:
                self._client._call(_proto.req_renew(lease), lost_at)
            except (UnavailableError, LimitError, NotLeaderError) as e:
                # Not a refusal: the node cannot answer for the lease now
                # (a leader is being elected); retried.
                why = e
            except ServerError as e:
                self._lose(f"renewal refused: {e}")
                return
            except LockdError as e:
                self._client.close()
                why = e
            else:
                self.renewals += 1
                backoff = 0
                next_at = _proto.renew_at(lease)
                continue
            if self._stop.is_set():
                return
            # Retry soon, never after the moment the lease counts as lost.
            pause, backoff = _proto.retry_after(lease.lease_ms, backoff)
            next_at = min(_proto.now() + pause, lost_at)
            self.last_error = why


class LockContext:
    """``with client.lock(name, lease="1m", wait="30s") as lease:``

    Entering acquires (WaitTimeoutError when the wait runs out) and
    starts a KeepAlive (unless keepalive=False).  Leaving stops it and
    releases the lease; a release that fails is kept in
    ``lease.release_error``, not raised (the lease then ends by itself).
    If the keep-alive lost the lease, ``on_lost(lease, error)`` was
    called on its thread, ``lease.check()`` raises LeaseLostError, and
    leaving the block raises it unless the block raised something else.
    """

    def __init__(self, client, name, lease, wait, onclose, on_lost,
                 keepalive, owner, limit=None, mode=None):
        self._client = client
        self._args = (name, lease, wait, onclose)
        self._kw = {"owner": owner, "limit": limit, "mode": mode}
        self._on_lost = on_lost
        self._keepalive = keepalive
        self._ka = None
        self.lease = None

    def __enter__(self):
        self.lease = self._client.acquire(*self._args, **self._kw)
        if self._keepalive:
            self._ka = KeepAlive(self._client.options, self.lease,
                                 self._on_lost).start()
        return self.lease

    def __exit__(self, exc_type, exc, tb):
        if self._ka is not None:
            self._ka.stop()
        try:
            self._client.release(self.lease)
        except LockdError as e:
            self.lease.release_error = e
        if self.lease.lost and exc_type is None:
            raise self.lease.lost_error
        return False
