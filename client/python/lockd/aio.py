"""The asyncio client: AsyncClient, its keep-alive task and the
``async with client.lock(...)`` context manager.

Calls from many tasks share one connection and are pipelined: each
request is written at once and its reply, which lockd sends in request
order, resolves the caller's future.  A waiting ACQUIRE holds back the
replies behind it, so give waiting acquires a client of their own when
other calls must not wait.  A caller cancelled while its ACQUIRE or TRY
is in flight loses nothing: a grant that arrives for it is released.
"""

import asyncio
import collections
import inspect

from . import _proto
from ._options import Options
from .client import _earliest
from .errors import (BadRequestError, CommandTimeoutError,
                     ConnectionClosedError, LeaseLostError, LimitError,
                     LockdConnectionError, LockdError, NotLeaderError,
                     ProtocolError, ServerError, UnavailableError)

__all__ = ["AsyncClient", "AsyncKeepAlive", "AsyncLockContext"]


class _Connection:
    """One stream, its replies due in order, and the task reading them."""

    def __init__(self, reader, writer, endpoint):
        self.reader = reader
        self.writer = writer
        self.endpoint = endpoint
        self.due = collections.deque()
        self.error = None
        self.retiring = False
        self.task = asyncio.get_running_loop().create_task(self._read())

    def send(self, req):
        if self.error is not None:
            raise self.error
        fut = asyncio.get_running_loop().create_future()
        req.sent = _proto.now()
        self.due.append((req, fut))
        self.writer.write(req.line)
        return fut

    async def _read(self):
        try:
            while True:
                try:
                    raw = await self.reader.readuntil(b"\n")
                except asyncio.IncompleteReadError:
                    raise ConnectionClosedError(
                        "lockd closed the connection") from None
                except asyncio.LimitOverrunError:
                    raise ProtocolError("a reply line is too long") from None
                except OSError as e:
                    raise LockdConnectionError(
                        "reading from lockd:"
                        f" {_proto.io_error_text(e)}") from None
                raw = raw[:-1]
                if raw.endswith(b"\r"):
                    raw = raw[:-1]
                if not self.due:
                    raise ProtocolError(f"a reply nobody asked for: {raw!r}")
                req, fut = self.due[0]
                result = _proto.parse_reply(req, raw)
                if result is _proto.MORE:    # LIST: its next line
                    continue
                self.due.popleft()
                if not fut.done():
                    fut.set_result(result)
                elif isinstance(result, _proto.Lease) and \
                        req.kind in ("ACQUIRE", "TRY"):
                    # Its caller gave up: hand the grant back at once.
                    self.send(_proto.req_release(result))
                if self.retiring and not self.due:
                    self.fail(ConnectionClosedError("connection retired"))
                    return
        except LockdError as e:
            self.fail(e)
        except asyncio.CancelledError:
            self.fail(ConnectionClosedError("connection closed"))
            raise

    def fail(self, error):
        if self.error is None:
            self.error = error
        while self.due:
            _, fut = self.due.popleft()
            if not fut.done():
                fut.set_exception(error)
                fut.exception()  # nobody may be waiting: not "never retrieved"
        self.writer.close()

    def retire(self):
        """Close once the replies still due have come."""
        self.retiring = True
        if not self.due:
            self.fail(ConnectionClosedError("connection retired"))

    async def close(self):
        self.fail(ConnectionClosedError("connection closed"))
        self.task.cancel()
        try:
            await self.task
        except (asyncio.CancelledError, LockdError):
            pass
        try:
            await self.writer.wait_closed()
        except (OSError, LockdError):
            pass


class AsyncClient:
    """The asyncio twin of Client: the same options and the same calls,
    as coroutines.  Connects on first use (or ``await connect()``);
    after a connection error the next call connects again.  Use it from
    one event loop."""

    def __init__(self, host=None, port=None, *, options=None, **kw):
        self.options = options if options is not None else \
            Options(host, port, **kw)
        self._endpoints = list(self.options.endpoints)
        self._preferred = 0
        self._conn = None
        self._connecting = None
        self.principal = None

    @property
    def endpoint(self):
        return self._conn.endpoint if self._conn is not None else None

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()
        return False

    async def close(self):
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    async def connect(self):
        """Connects (again), as Client.connect does."""
        await self.close()
        await self._connection()

    async def _connection(self):
        if self._conn is not None and self._conn.error is None:
            return self._conn
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(self._open_any())
        try:
            conn = await asyncio.shield(self._connecting)
        finally:
            if self._connecting is not None and self._connecting.done():
                self._connecting = None
        return conn

    async def _open_any(self):
        errors = []
        n = len(self._endpoints)
        for i in range(n):
            idx = (self._preferred + i) % n
            ep = self._endpoints[idx]
            try:
                conn = await asyncio.wait_for(
                    self._open(ep), self.options.connect_timeout)
            except asyncio.TimeoutError:
                errors.append(f"{_proto.endpoint_text(ep)}: timed out")
                continue
            except OSError as e:
                errors.append(f"{_proto.endpoint_text(ep)}:"
                              f" {_proto.io_error_text(e)}")
                continue
            self._preferred = idx
            break
        else:
            raise LockdConnectionError(
                "cannot connect to lockd: " + "; ".join(errors))
        token = self.options.token    # the file as it is now
        if token:
            result = await self._wait(conn, conn.send(
                _proto.req_auth(token)), None)
            if isinstance(result, BadRequestError):
                self.principal = None   # lockd without --auth
            elif isinstance(result, ServerError):
                await conn.close()
                raise result
            else:
                self.principal = result
        self._conn = conn
        return conn

    async def _open(self, ep):
        if ep[0] == "unix":
            reader, writer = await asyncio.open_unix_connection(
                ep[1], limit=_proto.REPLY_MAX)
        else:
            ssl = self.options.ssl_context
            reader, writer = await asyncio.open_connection(
                ep[0], ep[1], limit=_proto.REPLY_MAX, ssl=ssl,
                server_hostname=self.options.server_hostname(ep)
                if ssl else None)
        return _Connection(reader, writer, ep)

    def _timeout(self, req):
        t = self.options.command_timeout
        if t is None or (_proto.may_wait(req) and req.wait_ms is None):
            return None
        return t + (req.wait_ms or 0) / 1000.0

    async def _wait(self, conn, fut, timeout):
        try:
            await conn.writer.drain()
        except OSError as e:
            # Why the connection was lost (a TLS alert) is the reader's,
            # when it came in while the write was waiting.
            why = conn.reader.exception() or e
            conn.fail(LockdConnectionError(
                f"sending to lockd: {_proto.io_error_text(why)}"))
        if timeout is None:
            return await fut
        try:
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            err = CommandTimeoutError("no reply from lockd in time")
            conn.fail(err)
            if self._conn is conn:
                self._conn = None
            raise err from None

    async def _send(self, req, timeout):
        conn = await self._connection()
        try:
            return conn, await self._wait(
                conn, conn.send(req), _earliest(self._timeout(req), timeout))
        except LockdConnectionError:
            if self._conn is conn:
                self._conn = None
            raise

    async def _call(self, req, timeout=None):
        """As Client._call: without fail-over one more try on a new
        connection for a request safe to repeat when a reused one turns
        out dead; with it, NOTLEADER followed and broken connections left
        within the fail-over time."""
        if not self.options.failover_timeout:
            return await self._call_once(req, timeout)
        return await self._call_failover(req, timeout)

    async def _call_once(self, req, timeout):
        reused = self._conn is not None and self._conn.error is None
        try:
            _, result = await self._send(req, timeout)
        except CommandTimeoutError:
            raise
        except LockdConnectionError:
            if not reused or not _proto.repeatable(req):
                raise
            _, result = await self._send(req, timeout)
        if isinstance(result, ServerError):
            raise result
        return result

    async def _call_failover(self, req, timeout):
        start = _proto.now()
        deadline = None if timeout is None else start + timeout
        search = _proto.FailoverSearch(self.options.failover_timeout,
                                       len(self._endpoints), deadline)
        while True:
            began = None
            try:
                conn = await self._connection()
            except LockdConnectionError as e:
                error = e      # nothing was sent: safe for any request
                self._next_endpoint(None)
            else:
                began = _proto.now()
                try:
                    _, result = await self._send(
                        req, None if deadline is None else
                        max(0.001, deadline - began))
                except LockdConnectionError as e:
                    # Its fate unknown: again only when that is safe.
                    if isinstance(e, ProtocolError) or \
                            not _proto.repeatable(req):
                        raise
                    error = e
                    self._next_endpoint(conn)
                else:
                    if not isinstance(result, ServerError):
                        return result
                    if not isinstance(result, NotLeaderError):
                        raise result
                    error = result
                    self._follow(result, conn)
            pause = search.pause_after(error, began)
            if pause > 0:
                await asyncio.sleep(pause)

    def _leave(self, conn):
        """conn is done with (None: none could be made).  False when
        another caller has moved on already: then the endpoint stays."""
        if conn is None:
            return self._conn is None
        if conn.endpoint != self._endpoints[self._preferred]:
            return False
        if self._conn is conn:
            self._conn = None
        conn.retire()
        return True

    def _next_endpoint(self, conn):
        if self._leave(conn):
            self._preferred = (self._preferred + 1) % len(self._endpoints)

    def _follow(self, error, conn):
        """As Client._follow: only to a leader that was configured."""
        if not self._leave(conn):
            return
        self._preferred = _proto.next_endpoint(self._endpoints,
                                               self._preferred, error.leader)

    # ---- commands: as Client's ------------------------------------------
    async def acquire(self, name, lease=None, wait=None, onclose="keep", *,
                      owner=None, rid=None, delay=None, limit=None,
                      mode=None):
        """As Client.acquire, limit= and mode= included."""
        return await self._call(_proto.req_acquire(
            name, lease, wait, onclose, owner, self._rid(rid), delay, limit,
            mode))

    async def try_acquire(self, name, lease=None, onclose="keep", *,
                          owner=None, delay=None, rid=None, limit=None,
                          mode=None):
        """As Client.try_acquire, limit= and mode= included."""
        return await self._call(_proto.req_try(name, lease, onclose, owner,
                                               delay, self._rid(rid), limit,
                                               mode))

    def _rid(self, rid):
        if rid is None and self.options.failover_timeout:
            return _proto.new_rid()
        return rid

    async def renew(self, held=None, lease=None, *, length=None):
        """As Client.renew: the Lease held, for a lease of ``lease``."""
        return await self._call(_proto.req_renew(held, lease, length))

    async def release(self, lease):
        return await self._call(_proto.req_release(lease))

    async def status(self, name):
        return await self._call(_proto.req_status(name))

    async def ping(self):
        return await self._call(_proto.req_ping())

    async def stats(self):
        return await self._call(_proto.req_stats())

    async def list(self, prefix=None, after=None, limit=None):
        return await self._call(_proto.req_list(prefix, after, limit))

    async def force(self, name, fence):
        return await self._call(_proto.req_force(name, fence))

    async def check(self, name, fence):
        return await self._call(_proto.req_check(name, fence))

    async def watch(self, name, fence=None, wait=None):
        """As Client.watch; concurrent calls on this client wait behind
        a pending WATCH (it holds back later replies): use a client of
        its own."""
        return await self._call(_proto.req_watch(name, fence, wait))

    def keepalive(self, lease, on_lost=None):
        """Starts an AsyncKeepAlive task for lease; ``await ka.stop()``."""
        return AsyncKeepAlive(self.options, lease, on_lost).start()

    def lock(self, name, lease=None, wait=None, onclose="keep", *,
             on_lost=None, keepalive=True, owner=None, cancel_on_loss=True,
             limit=None, mode=None):
        return AsyncLockContext(self, name, lease, wait, onclose, on_lost,
                                keepalive, owner, cancel_on_loss, limit,
                                mode)


class AsyncKeepAlive:
    """KeepAlive as a task: the same schedule and rules of loss, on a
    connection of its own.  ``on_lost(lease, error)`` may be a plain
    function or a coroutine function."""

    def __init__(self, options, lease, on_lost=None):
        self.lease = lease
        self._on_lost = on_lost
        self._client = AsyncClient(options=options)
        self._task = None
        self.renewals = 0
        self.last_error = None

    def start(self):
        if not self.lease.lease_ms:
            raise ValueError("the lease has no length: renew it once first")
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def stop(self):
        if self._task is not None and not self._task.done():
            self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        await self._client.close()
        return self.lease.lost_error

    async def _lose(self, why):
        lease = self.lease
        err = LeaseLostError(f"lease of {lease.name} (fence {lease.fence})"
                             f" lost: {why}")
        lease.lost_error = err
        if self._on_lost is not None:
            result = self._on_lost(lease, err)
            if inspect.isawaitable(result):
                await result

    async def _run(self):
        lease = self.lease
        backoff = 0
        next_at = _proto.renew_at(lease)
        while True:
            lost_at = _proto.lost_at(lease)
            await asyncio.sleep(max(0.0, next_at - _proto.now()))
            left = lost_at - _proto.now()
            if left <= 0:
                await self._lose("no renewal succeeded in time")
                return
            try:
                await asyncio.wait_for(
                    self._client._call(_proto.req_renew(lease)), left)
            except (UnavailableError, LimitError, NotLeaderError) as e:
                # Not a refusal: the node cannot answer for the lease now
                # (a leader is being elected); retried.
                self.last_error = e
            except ServerError as e:
                await self._lose(f"renewal refused: {e}")
                return
            except (LockdError, asyncio.TimeoutError, OSError) as e:
                self.last_error = e
                await self._client.close()
            else:
                self.renewals += 1
                backoff = 0
                next_at = _proto.renew_at(lease)
                continue
            pause, backoff = _proto.retry_after(lease.lease_ms, backoff)
            next_at = min(_proto.now() + pause, lost_at)


class AsyncLockContext:
    """``async with client.lock(name, lease="1m", wait="30s") as lease:``

    As LockContext, with the keep-alive as a task.  When the lease is
    lost, ``on_lost`` is called and (``cancel_on_loss=True``, the
    default) the task running the block is cancelled, so it stops at its
    next await; leaving the block then raises LeaseLostError instead of
    CancelledError.
    """

    def __init__(self, client, name, lease, wait, onclose, on_lost,
                 keepalive, owner, cancel_on_loss, limit=None, mode=None):
        self._client = client
        self._args = (name, lease, wait, onclose)
        self._kw = {"owner": owner, "limit": limit, "mode": mode}
        self._on_lost = on_lost
        self._keepalive = keepalive
        self._cancel_on_loss = cancel_on_loss
        self._ka = None
        self._task = None
        self._cancelled = False
        self.lease = None

    async def _lost(self, lease, error):
        if self._on_lost is not None:
            result = self._on_lost(lease, error)
            if inspect.isawaitable(result):
                await result
        if self._cancel_on_loss and self._task is not None:
            self._cancelled = True
            self._task.cancel()

    async def __aenter__(self):
        self._task = asyncio.current_task()
        self.lease = await self._client.acquire(*self._args, **self._kw)
        if self._keepalive:
            self._ka = AsyncKeepAlive(self._client.options, self.lease,
                                      self._lost).start()
        return self.lease

    async def __aexit__(self, exc_type, exc, tb):
        ours = self._cancelled and self._task.uncancel() == 0 and \
            exc_type is asyncio.CancelledError
        if self._ka is not None:
            await self._ka.stop()
        try:
            await self._client.release(self.lease)
        except LockdError as e:
            self.lease.release_error = e
        if ours or (self.lease.lost and exc_type is None):
            raise self.lease.lost_error from None
        return False
