"""The exceptions of the lockd client: one class per ERR code of the
protocol, a common base, connection errors and the loss of a lease.

Everything the client raises on purpose is a LockdError.  A server error
(``ERR <CODE> text``) leaves the connection usable; a connection error
(LockdConnectionError and its subclasses) means the connection is dead and
the replies still due on it are lost: the next call reconnects.
"""

__all__ = [
    "LockdError", "ServerError", "BadRequestError", "BadArgumentError",
    "TooLongError", "WaitTimeoutError", "ConflictError", "LimitError",
    "UnavailableError", "FenceOverflowError", "ShutdownError",
    "NotLeaderError", "DeniedError", "LockdConnectionError",
    "ConnectionClosedError", "ProtocolError", "CommandTimeoutError",
    "LeaseLostError", "ERROR_CLASSES", "error_from_reply",
]


class LockdError(Exception):
    """The base of every error this package raises."""


class ServerError(LockdError):
    """lockd answered ``ERR <code> <text>``; the connection lives on.

    ``code`` is the protocol's code (``"CONFLICT"``), ``text`` the
    server's sentence for humans.  An ERR code this client does not know
    is raised as a plain ServerError.
    """

    code = None

    def __init__(self, code, text=""):
        self.code = code
        self.text = text
        super().__init__(f"ERR {code} {text}".rstrip())


class BadRequestError(ServerError):
    """BADREQ: unknown command, wrong number of arguments, malformed line."""


class BadArgumentError(ServerError):
    """BADARG: a bad name, duration, handle or option."""


class TooLongError(ServerError):
    """TOOLONG: the request line exceeded the server's line limit."""


class WaitTimeoutError(ServerError):
    """TIMEOUT: an ACQUIRE's wait ran out before the lock was granted."""


class ConflictError(ServerError):
    """CONFLICT: RENEW with a handle that is not the current holder's."""


class LimitError(ServerError):
    """LIMIT: a server limit was hit (connections, waiters, held locks)."""


class UnavailableError(ServerError):
    """UNAVAILABLE: the server's store failed; nothing changed."""


class FenceOverflowError(ServerError):
    """OVERFLOW: the lock's fence counter is exhausted (it never wraps)."""


class ShutdownError(ServerError):
    """SHUTDOWN: the server is stopping; a waiting ACQUIRE was cancelled."""


class NotLeaderError(ServerError):
    """NOTLEADER: a cluster node that does not serve locks now.

    ``leader`` is ``(host, port)`` when the reply named the leader
    (``leader=<host:port>``), else None.
    """

    def __init__(self, code, text=""):
        super().__init__(code, text)
        self.leader = None
        first = text.split(None, 1)[0] if text else ""
        if first.startswith("leader="):
            host, sep, port = first[len("leader="):].rpartition(":")
            if sep and host and port.isdigit() and 0 < int(port) < 65536:
                self.leader = (host.strip("[]"), int(port))


class DeniedError(ServerError):
    """DENIED: authentication is on and this connection may not do this
    (not authenticated, or no permission for this name), or AUTH failed."""


class LockdConnectionError(LockdError, ConnectionError):
    """The connection failed (connect, send or receive) and is closed."""


class ConnectionClosedError(LockdConnectionError):
    """The server closed the connection."""


class ProtocolError(LockdConnectionError):
    """A reply that cannot be parsed or does not answer its request."""


class CommandTimeoutError(LockdConnectionError, TimeoutError):
    """The connect or command timeout of the client ran out.  The reply
    may still come, so the connection is closed."""


class LeaseLostError(LockdError):
    """The keep-alive could not keep the lease: a renewal was refused, or
    no renewal succeeded before the lease could end.  Stop touching the
    guarded resource."""


ERROR_CLASSES = {
    "BADREQ": BadRequestError,
    "BADARG": BadArgumentError,
    "TOOLONG": TooLongError,
    "TIMEOUT": WaitTimeoutError,
    "CONFLICT": ConflictError,
    "LIMIT": LimitError,
    "UNAVAILABLE": UnavailableError,
    "OVERFLOW": FenceOverflowError,
    "SHUTDOWN": ShutdownError,
    "NOTLEADER": NotLeaderError,
    "DENIED": DeniedError,
}


def error_from_reply(line):
    """The exception for one ``ERR <CODE> [text]`` reply line (a str)."""
    parts = line.split(None, 2)
    code = parts[1] if len(parts) > 1 else ""
    text = parts[2] if len(parts) > 2 else ""
    return ERROR_CLASSES.get(code, ServerError)(code, text)
