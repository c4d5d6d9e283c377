"""The lockd line protocol for the Python client: durations, names,
endpoints, request lines and the parsing of reply lines.

Pure: no sockets and no threads here, so the sync and asyncio clients
share every rule about what is sent and what a reply means.
"""

import datetime
import math
import os
import re
import secrets
import ssl
import time
import warnings

from .errors import (CommandTimeoutError, ProtocolError, ServerError,
                     error_from_reply)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7420
NAME_MAX = 255
MAX_DURATION_MS = 365 * 24 * 3600 * 1000
# Replies are one line each; STATS is the longest.  A longer line is not
# lockd talking.
REPLY_MAX = 1 << 20
# At most this many requests go out ahead of their replies (lockd cuts off
# a client that leaves too many replies unread), as liblockd does.
PIPELINE_WINDOW = 512

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
_DURATION = re.compile(r"^([0-9]+)(ms|s|m|h)$")
_HANDLE = re.compile(r"^([1-9][0-9]{0,18})-[0-9a-f]{16}$")
_WORD_BAD = re.compile(r"[\x00-\x20\x7f]")

if hasattr(time, "CLOCK_BOOTTIME"):
    def now():
        """Seconds on the clock leases are tracked on: one no wall-clock
        step moves and that runs on through a suspend (CLOCK_BOOTTIME)."""
        return time.clock_gettime(time.CLOCK_BOOTTIME)
else:  # pragma: no cover - not Linux
    now = time.monotonic


def duration_ms(value, what="duration"):
    """Milliseconds for a duration given as the protocol writes it
    ("1500ms", "30s", "5m", "1h"), as a number of seconds (int or float,
    like time.sleep), or as a datetime.timedelta.  None stays None.

    A string without a unit ("1500") is refused: the protocol reads it as
    milliseconds and Python as seconds, so neither reading is safe.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{what}: a bool is not a duration")
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{what} must be a non-negative duration,"
                             f" not {shown(value)}")
        ms = round(value * 1000)
    elif isinstance(value, str):
        m = _DURATION.match(value.strip())
        if m is None:
            raise ValueError(
                f"{what} {shown(value)}: write a number of seconds or a string"
                " with its unit: '1500ms', '30s', '5m', '1h'")
        ms = int(m.group(1)) * _UNITS[m.group(2)]
    else:
        raise TypeError(f"{what}: not a duration: {shown(value)}")
    if ms > MAX_DURATION_MS:
        raise ValueError(f"{what} {shown(value)} is above 365 days")
    return ms


def seconds(value, what="timeout"):
    """A timeout option in seconds (float), from anything duration_ms
    takes; None and 0 mean no timeout."""
    ms = duration_ms(value, what)
    return None if not ms else ms / 1000.0


# What a server's TLS alert refusing this client means, by the reason
# Python's ssl gives it.  With TLS 1.3 the client's handshake is over
# before the server looks at its certificate, so the alert comes with the
# first read.  TLS 1.2 sends a handshake failure for a missing certificate,
# and for other things too: "may".
_TLS_REFUSALS = {
    "TLSV13_ALERT_CERTIFICATE_REQUIRED":
        "the server requires a client certificate (TLS alert: certificate"
        " required): give tls_cert_file= and tls_key_file=",
    "SSLV3_ALERT_HANDSHAKE_FAILURE":
        "the server refused the handshake (TLS alert: handshake failure):"
        " it may require a client certificate (tls_cert_file=,"
        " tls_key_file=)",
}


def io_error_text(error):
    """An OSError from a socket as a sentence: for a TLS alert that
    refuses this client, what it means; else the error itself."""
    if isinstance(error, ssl.SSLError) and error.reason in _TLS_REFUSALS:
        return _TLS_REFUSALS[error.reason]
    return str(error)


# How much of a caller's value an error message repeats.
SHOWN_MAX = 40


def shown(value):
    """value as an error message shows it: repr() when short, else the
    repr of its first characters and its length, so that a 100 KB name
    does not fill the traceback."""
    if isinstance(value, (str, bytes)) and len(value) > SHOWN_MAX:
        return f"{value[:SHOWN_MAX]!r}... ({len(value)} characters)"
    return repr(value)


def check_word(value, what, limit):
    """A name, owner or rid as the protocol allows: 1..limit bytes, no
    whitespace or control byte.  Returns it as a str."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    raw = value.encode("utf-8", "surrogateescape")
    if not 1 <= len(raw) <= limit or _WORD_BAD.search(value):
        raise ValueError(f"bad {what} {shown(value)}: 1 to {limit} bytes, no"
                         " whitespace or control characters")
    return value


def check_name(name):
    return check_word(name, "lock name", NAME_MAX)


def fence_of_handle(handle):
    m = _HANDLE.match(handle) if isinstance(handle, str) else None
    if m is None or int(m.group(1)) > (1 << 63) - 1:
        raise ValueError(f"bad handle {shown(handle)}:"
                         " <fence>-<16 hex digits>")
    return int(m.group(1))


# The most endpoints one client may name, as liblockd's.
ENDPOINTS_MAX = 16


def parse_endpoint(value, default_port=DEFAULT_PORT):
    """("host", port) or ("unix", path) from "host:port", "[v6]:port",
    "host" (default_port), "unix:/path", "lockd://host[:port]",
    "lockds://host[:port]" (TLS: see endpoint_scheme), "lockd:///path",
    or a (host, port) tuple."""
    if isinstance(value, tuple) and len(value) == 2:
        host, port = value
        if host == "unix":
            return ("unix", str(port))
        return (str(host), int(port))
    if not isinstance(value, str) or not value:
        raise ValueError(f"bad endpoint {shown(value)}")
    for scheme in ("lockds://", "lockd://"):
        if value.startswith(scheme):
            rest = value[len(scheme):]
            if rest.startswith("/"):
                if scheme == "lockds://":
                    raise ValueError(f"bad URL {shown(value)}: TLS is for TCP,"
                                     " not a Unix socket")
                return ("unix", rest)
            if not rest or "/" in rest or rest.startswith(":"):
                raise ValueError(f"bad URL {shown(value)}:"
                                 " lockd://HOST[:PORT],"
                                 " lockds://HOST[:PORT] or lockd:///PATH")
            return parse_endpoint(rest)
    if value.startswith("unix:"):
        return ("unix", value[5:])
    if value.startswith("/"):
        return ("unix", value)
    if value.startswith("["):
        host, close, rest = value[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            raise ValueError(f"bad endpoint {shown(value)}")
        port = rest[1:] if rest.startswith(":") else ""
        if rest == ":":
            raise ValueError(f"bad endpoint {shown(value)}: port")
    elif value.count(":") == 1:
        host, _, port = value.partition(":")
        if not port:
            raise ValueError(f"bad endpoint {shown(value)}: port")
    else:
        host, port = value, ""
    if not host:
        raise ValueError(f"bad endpoint {shown(value)}: no host")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"bad endpoint {shown(value)}: port 1-65535")
    return (host, int(port) if port else default_port)


def endpoint_scheme(value):
    """"lockds" for a lockds:// URL, "lockd" for a lockd:// one, else
    None."""
    if isinstance(value, str):
        if value.startswith("lockds://"):
            return "lockds"
        if value.startswith("lockd://"):
            return "lockd"
    return None


def next_endpoint(endpoints, current, leader):
    """The index of the endpoint a client on endpoints[current] connects
    to next after a NOTLEADER naming leader (None: none): that leader when
    it was configured, spelled the same (an address from the wire that
    nobody configured is never connected to), and is not the node that
    said it (a node never names itself, but one that did would be asked
    again and again); else the endpoint after current."""
    if leader is not None and leader in endpoints:
        at = endpoints.index(leader)
        if at != current:
            return at
    return (current + 1) % len(endpoints)


# The fail-over search (liblockd's lockd__call): at most this many
# attempts; each endpoint once at once, then pauses of 50 ms doubling to
# 250 ms.
FAILOVER_HOPS_MAX = 64
FAILOVER_BACKOFF = 0.05
FAILOVER_BACKOFF_MAX = 0.25


def gave_up(error, attempts, took):
    """The error a fail-over that found no node to serve ends with: the
    last one's kind, saying so."""
    why = (f"no leader answered in {attempts} attempts over"
           f" {int(took * 1000)} ms; last: {error}")
    if isinstance(error, ServerError):
        return type(error)(error.code, why)
    return type(error)(why)


class FailoverSearch:
    """The bookkeeping of one call's fail-over search, the same for the
    blocking and the asyncio client (they differ only in how they wait):
    after each failed attempt, the pause before the next one, or the
    error that ends the search.  ``timeout`` is the fail-over time,
    ``endpoints`` how many there are, ``deadline`` the call's own (on
    now()'s clock; None: none)."""

    def __init__(self, timeout, endpoints, deadline=None):
        self.timeout = timeout
        self.endpoints = endpoints
        self.deadline = deadline
        self.start = now()
        self.attempt = 0
        self.backoff = FAILOVER_BACKOFF

    def pause_after(self, error, began):
        """An attempt failed with error; began is when its request went
        out (None: no connection was made).  Returns the seconds to wait
        before the next attempt; raises the error that ends the search."""
        self.attempt += 1
        t = now()
        # An attempt that ran longer than the fail-over time was a
        # healthy wait (an ACQUIRE, a WATCH): count from its end.  (A
        # stall that timed out was no wait: it counts.)
        if began is not None and t - began > self.timeout and \
                not isinstance(error, CommandTimeoutError):
            self.start, self.attempt = t, 1
            self.backoff = FAILOVER_BACKOFF
        left = self.start + self.timeout - t
        if self.deadline is not None:
            left = min(left, self.deadline - t)
        if self.attempt >= FAILOVER_HOPS_MAX or left <= 0:
            raise gave_up(error, self.attempt, t - self.start)
        if self.attempt < self.endpoints:
            return 0.0     # each endpoint once at once
        pause = min(self.backoff, left)
        self.backoff = min(self.backoff * 2, FAILOVER_BACKOFF_MAX)
        return pause


# The renewal schedule of every lockd client (liblockd's client/schedule.h
# says why): as shares of the lease L, renew L/3 into it; the lease counts
# as lost L/10 before it ends; a renewal that failed without a refusal is
# tried again after 50 ms, the pause doubling to at most 250 ms and L/15.
RENEW_DIVISOR = 3
LOST_DIVISOR = 10
RETRY_FIRST = 0.05
RETRY_MAX = 0.25
RETRY_DIVISOR = 15
RETRY_MIN = 0.01


def renew_at(lease):
    """When the next renewal of lease (as last granted) goes out."""
    return lease.deadline - lease.lease_ms / 1000.0 + \
        lease.lease_ms / 1000.0 / RENEW_DIVISOR


def lost_at(lease):
    """When lease counts as lost."""
    return lease.deadline - lease.lease_ms / 1000.0 / LOST_DIVISOR


def retry_after(lease_ms, backoff):
    """(pause, next backoff) before the next try of a failed renewal;
    backoff is 0 after a renewal that succeeded."""
    cap = min(max(lease_ms / 1000.0 / RETRY_DIVISOR, RETRY_MIN), RETRY_MAX)
    pause = min(backoff if backoff > 0 else RETRY_FIRST, cap)
    return pause, min(pause * 2, cap)


def new_rid():
    """A fresh rid= for one call: 32 hex digits (128 random bits)."""
    return secrets.token_hex(16)


def endpoint_text(ep):
    return f"unix:{ep[1]}" if ep[0] == "unix" else f"{ep[0]}:{ep[1]}"


def read_token(token_file=None, env=None):
    """The AUTH token: from token_file when given, else from the
    LOCKD_TOKEN environment variable, else None.  Never from argv."""
    env = os.environ if env is None else env
    if token_file is not None:
        # Its first line, as liblockd reads it.
        with open(token_file, encoding="utf-8") as f:
            token = f.readline().strip()
        source = token_file
    else:
        token = env.get("LOCKD_TOKEN")
        if not token:
            return None
        source = "LOCKD_TOKEN"
    if not token or _WORD_BAD.search(token):
        raise ValueError(f"the token in {source} must be one word")
    return token


class Lease:
    """A granted lease.  ``fence`` goes with every write to the guarded
    resource; ``handle`` is the proof of holding (RENEW, RELEASE).
    ``lease_ms`` is the lease as granted or last renewed; ``deadline`` a
    time on lockd.now()'s clock before which the lease has certainly not
    ended (when the request that granted or renewed it was sent, plus the
    lease).  A Lease made from a name and a saved handle can be renewed
    and released; its lease_ms and deadline are 0 until renewed.
    """

    def __init__(self, name, handle, lease_ms=0, deadline=0.0):
        self.name = check_name(name)
        self.fence = fence_of_handle(handle)
        self.handle = handle
        self.lease_ms = lease_ms
        self.deadline = deadline
        self.lost_error = None      # set by a keep-alive that lost it
        self.release_error = None   # set when the release at exit failed

    @property
    def lost(self):
        """True once a keep-alive reported the lease lost."""
        return self.lost_error is not None

    def check(self):
        """Raises the LeaseLostError when the keep-alive lost the lease."""
        if self.lost_error is not None:
            raise self.lost_error

    def __repr__(self):
        return (f"Lease(name={self.name!r}, fence={self.fence},"
                f" handle={self.handle!r}, lease_ms={self.lease_ms})")


class Status:
    """A STATUS reply: diagnostics only, never a basis for an acquire.
    ``fields`` holds every field, appended ones (owner=, holders=, ...)
    included, as strings.

    ``holders`` counts the live holders (0 when free, 1 for a held plain
    lock, up to ``limit`` for a semaphore, any number of readers for a
    shared lock); ``limit`` is 1 unless the name is a semaphore; ``mode``
    is "shared" while it is held shared, else "exclusive".  ``fence`` and
    ``ttl_ms`` are the newest holder's."""

    def __init__(self, name, fields):
        self.name = name
        self.fields = fields
        try:
            self.held = fields["held"] == "1"
            self.fence = int(fields["fence"])
            self.ttl_ms = int(fields["ttl"])
            self.queue = int(fields["queue"])
            # Protocol v2's appended fields, when they apply.
            self.holders = int(fields.get("holders", int(self.held)))
            self.limit = int(fields.get("limit", 1))
            self.delay_ms = int(fields.get("delay", 0))
        except KeyError as e:
            raise ProtocolError(f"STATUS reply without {e}") from None
        except ValueError as e:
            raise ProtocolError(f"STATUS reply with a bad number: {e}") \
                from None
        self.owner = fields.get("owner")
        self.mode = fields.get("mode", "exclusive")
        self.cause = fields.get("cause")   # WATCH's CHANGED only

    def __repr__(self):
        kind = ""
        if self.limit > 1 or self.mode == "shared":
            kind = f", holders={self.holders}"
        if self.limit > 1:
            kind += f", limit={self.limit}"
        if self.mode == "shared":
            kind += ", mode='shared'"
        return (f"Status(name={self.name!r}, held={self.held},"
                f" fence={self.fence}, ttl_ms={self.ttl_ms},"
                f" queue={self.queue}{kind})")


class Check:
    """A CHECK reply: ``current`` when a live holder has the fence asked
    about (``ttl_ms`` then left of its lease), else the newest holder's
    ``fence`` (0 when free)."""

    def __init__(self, name, current, fence, ttl_ms=0):
        self.name = name
        self.current = current
        self.fence = fence
        self.ttl_ms = ttl_ms

    def __bool__(self):
        return self.current

    def __repr__(self):
        return (f"Check(name={self.name!r}, current={self.current},"
                f" fence={self.fence}, ttl_ms={self.ttl_ms})")


class LockList:
    """A LIST reply: ``locks`` (a Status each, in name order) and
    ``next``, the name to pass as ``after=`` for the next page, or None
    when this page is the last."""

    def __init__(self, locks, next_name):
        self.locks = locks
        self.next = next_name

    def __iter__(self):
        return iter(self.locks)

    def __len__(self):
        return len(self.locks)

    def __repr__(self):
        return f"LockList({len(self.locks)} locks, next={self.next!r})"


# parse_reply's answer to a line of a reply that goes on (LIST's LOCK
# lines): read the next line for the same request.
MORE = object()


class Request:
    """One request on the wire and what its reply must look like."""

    __slots__ = ("kind", "name", "line", "wait_ms", "sent", "lease",
                 "items")

    def __init__(self, kind, name, line, wait_ms=0, lease=None):
        self.kind = kind
        self.name = name
        self.line = line.encode("utf-8", "surrogateescape")
        self.wait_ms = wait_ms      # None: may wait forever
        self.sent = 0.0
        self.lease = lease          # RENEW: the Lease to update
        self.items = []             # LIST: the LOCK lines read so far


def repeatable(req):
    """True when sending req twice does what sending it once does: RENEW,
    RELEASE (a second one is a stale no-op), STATUS, PING, STATS, and an
    ACQUIRE or TRY with a rid (protocol v2: the repeat finds the same
    grant)."""
    if req.kind in ("ACQUIRE", "TRY"):
        return b" rid=" in req.line
    return req.kind in ("RENEW", "RELEASE", "STATUS", "PING", "STATS",
                        "LIST", "CHECK", "WATCH", "FORCE")


def may_wait(req):
    """ACQUIRE and WATCH wait on the server: their reply is given their
    wait on top of the command timeout, and none when they may wait
    forever (wait_ms None)."""
    return req.kind in ("ACQUIRE", "WATCH")


def _onclose(onclose):
    if onclose not in ("keep", "release"):
        raise ValueError("onclose must be 'keep' or 'release'")
    return "" if onclose == "keep" else " onclose=release"


def _options(**kw):
    out = ""
    for key, value in kw.items():
        if value is not None:
            out += f" {key}={value}"
    return out


# A semaphore's largest limit=.
LIMIT_MAX = 65535
MODES = ("exclusive", "shared")


def _kind(limit, mode):
    """limit= and mode= as the wire says them: a semaphore's limit (2 to
    65535; None or 1, a plain lock, is not sent) and mode=shared (None or
    "exclusive" is not sent), as liblockd sends them."""
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError("limit is an int")
        if not 1 <= limit <= LIMIT_MAX:
            raise ValueError(f"limit is 1 to {LIMIT_MAX}, not {limit}")
    if mode is not None and mode not in MODES:
        raise ValueError(f"mode is 'exclusive' or 'shared', not {shown(mode)}")
    if mode == "shared" and limit is not None and limit > 1:
        raise ValueError("a shared lock has no limit above 1")
    return _options(limit=limit if limit is not None and limit > 1 else None,
                    mode="shared" if mode == "shared" else None)


def req_acquire(name, lease=None, wait=None, onclose="keep", owner=None,
                rid=None, delay=None, limit=None, mode=None):
    name = check_name(name)
    lease_ms = duration_ms(lease, "lease")
    wait_ms = duration_ms(wait, "wait")
    delay_ms = duration_ms(delay, "delay")
    if owner is not None:
        check_word(owner, "owner", 64)
    if rid is not None:
        check_word(rid, "rid", 64)
    line = (f"ACQUIRE {name}" + _options(lease=lease_ms, wait=wait_ms)
            + _onclose(onclose)
            + _options(owner=owner, rid=rid, delay=delay_ms)
            + _kind(limit, mode) + "\n")
    return Request("ACQUIRE", name, line, wait_ms)


def req_try(name, lease=None, onclose="keep", owner=None, delay=None,
            rid=None, limit=None, mode=None):
    name = check_name(name)
    lease_ms = duration_ms(lease, "lease")
    delay_ms = duration_ms(delay, "delay")
    if owner is not None:
        check_word(owner, "owner", 64)
    if rid is not None:
        check_word(rid, "rid", 64)
    line = (f"TRY {name}" + _options(lease=lease_ms) + _onclose(onclose)
            + _options(owner=owner, rid=rid, delay=delay_ms)
            + _kind(limit, mode) + "\n")
    return Request("TRY", name, line)


def req_renew(held, lease=None, length=None):
    """RENEW of the Lease held, for a lease of ``lease`` (a duration, as
    acquire()'s ``lease=``; None: the held lease's current length).

    Earlier releases spelt it ``renew(lease, length=None)``: the Lease as
    a keyword (``renew(lease=held)``) and ``length=`` still work, the
    latter with a DeprecationWarning."""
    if held is None and isinstance(lease, Lease):
        held, lease = lease, None
    if length is not None:
        if lease is not None:
            raise TypeError("renew: give the lease once, as lease= (length="
                            " is its old name)")
        warnings.warn("renew(length=...) is now renew(..., lease=...), as"
                      " in acquire()", DeprecationWarning, stacklevel=3)
        lease = length
    if not isinstance(held, Lease):
        raise TypeError("renew takes a Lease, then optionally lease=, the"
                        " lease's new length")
    ms = duration_ms(lease, "lease")
    if ms is None:
        ms = held.lease_ms or None
    line = f"RENEW {held.name} {held.handle}" + _options(lease=ms) + "\n"
    return Request("RENEW", held.name, line, lease=held)


def req_release(lease):
    if not isinstance(lease, Lease):
        raise TypeError("release takes a Lease")
    return Request("RELEASE", lease.name,
                   f"RELEASE {lease.name} {lease.handle}\n")


def req_status(name):
    name = check_name(name)
    return Request("STATUS", name, f"STATUS {name}\n")


def req_ping():
    return Request("PING", None, "PING\n")


def _fence(fence, lowest=1):
    if isinstance(fence, bool) or not isinstance(fence, int):
        raise TypeError("a fence is an int")
    if not lowest <= fence < 2 ** 63:
        raise ValueError(f"a fence is {lowest} to 2**63-1, not {fence}")
    return fence


LIST_LIMIT_MAX = 1000


def req_list(prefix=None, after=None, limit=None):
    if prefix is not None and prefix != "":
        check_word(prefix, "prefix", NAME_MAX)
    else:
        prefix = None
    if after is not None:
        check_name(after)
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError("limit is an int")
        if not 1 <= limit <= LIST_LIMIT_MAX:
            raise ValueError(f"limit is 1 to {LIST_LIMIT_MAX}, not {limit}")
    return Request("LIST", None, "LIST" + _options(
        prefix=prefix, after=after, limit=limit) + "\n")


def req_force(name, fence):
    name = check_name(name)
    return Request("FORCE", name, f"FORCE {name} {_fence(fence)}\n")


def req_check(name, fence):
    name = check_name(name)
    return Request("CHECK", name, f"CHECK {name} {_fence(fence)}\n")


def req_watch(name, fence=None, wait=None):
    name = check_name(name)
    if fence is not None:
        _fence(fence, 0)
    wait_ms = duration_ms(wait, "wait")
    return Request("WATCH", name, f"WATCH {name}"
                   + _options(fence=fence, wait=wait_ms) + "\n", wait_ms)


def req_stats():
    return Request("STATS", None, "STATS\n")


def req_auth(token):
    return Request("AUTH", None, f"AUTH {token}\n")


def _fields(words):
    out = {}
    for w in words:
        key, sep, value = w.partition("=")
        if sep:
            out[key] = value
    return out


def _int(fields, key, line):
    try:
        return int(fields[key])
    except (KeyError, ValueError):
        raise ProtocolError(f"reply without a valid {key}=: {line!r}") \
            from None


def parse_reply(req, raw):
    """The result of one reply line (bytes, without its line end) to req,
    or the ServerError instance for an ERR reply (returned, not raised,
    so a pipeline can keep it in its place).  Raises ProtocolError for a
    reply that does not answer req.

    Results: ACQUIRE a Lease; TRY a Lease or None (HELD); RENEW the Lease,
    updated; RELEASE and FORCE True (RELEASED) or False (NOTHELD, a stale
    handle or fence); STATUS a Status; WATCH a Status with its cause;
    CHECK a Check; LIST MORE for each LOCK line, then a LockList at END;
    PING True; STATS a dict; AUTH the principal.
    """
    line = raw.decode("utf-8", "surrogateescape")
    words = line.split()
    if not words:
        raise ProtocolError("an empty reply line")
    word = words[0]
    if word == "ERR":
        return error_from_reply(line)
    expect = {"ACQUIRE": ("GRANTED",), "TRY": ("GRANTED", "HELD"),
              "RENEW": ("RENEWED",), "RELEASE": ("RELEASED", "NOTHELD"),
              "STATUS": ("STATUS",), "PING": ("PONG",), "STATS": ("STATS",),
              "AUTH": ("AUTHED",), "LIST": ("LOCK", "END"),
              "FORCE": ("RELEASED", "NOTHELD"), "CHECK": ("CURRENT", "STALE"),
              "WATCH": ("CHANGED",)}[req.kind]
    if word not in expect:
        raise ProtocolError(f"{req.kind} answered {line!r}")
    if req.name is not None and (len(words) < 2 or words[1] != req.name):
        raise ProtocolError(f"{req.kind} {req.name} answered {line!r}")
    if word == "GRANTED":
        f = _fields(words[2:])
        lease_ms = _int(f, "lease", line)
        lease = Lease(req.name, f.get("handle", ""), lease_ms,
                      req.sent + lease_ms / 1000.0)
        if lease.fence != _int(f, "fence", line):
            raise ProtocolError(f"fence and handle differ: {line!r}")
        return lease
    if word == "RENEWED":
        f = _fields(words[2:])
        lease = req.lease
        lease.lease_ms = _int(f, "lease", line)
        lease.deadline = req.sent + lease.lease_ms / 1000.0
        return lease
    if word == "LOCK":
        if len(words) < 2:
            raise ProtocolError(f"LIST answered {line!r}")
        req.items.append(Status(words[1], _fields(words[2:])))
        return MORE
    if word == "END":
        f = _fields(words[1:])
        if _int(f, "count", line) != len(req.items):
            raise ProtocolError(f"LIST: {len(req.items)} LOCK lines, "
                                f"then {line!r}")
        items, req.items = req.items, []
        return LockList(items, f.get("next"))
    if word == "CURRENT" or word == "STALE":
        f = _fields(words[2:])
        return Check(req.name, word == "CURRENT", _int(f, "fence", line),
                     int(f.get("ttl", 0)))
    if word == "CHANGED":
        return Status(req.name, _fields(words[2:]))
    if word == "HELD":
        return None
    if word == "RELEASED":
        return True
    if word == "NOTHELD":
        return False
    if word == "STATUS":
        return Status(req.name, _fields(words[2:]))
    if word == "PONG":
        return True
    if word == "STATS":
        return {k: int(v) if v.isdigit() else v
                for k, v in _fields(words[1:]).items()}
    if word == "AUTHED":
        return words[1] if len(words) > 1 else ""
    raise ProtocolError(f"unexpected reply {line!r}")  # pragma: no cover
