"""The options a client connects with, shared by the sync client, the
asyncio client and their keep-alives (which open connections of their own
with the same options)."""

import ssl

from . import _proto


_DEFAULT = object()

# Fail-over's defaults and bounds, as liblockd's: the time (seconds) a
# search for a node that serves may take, the attempts it may make, and
# the pause between attempts once each endpoint had one.
FAILOVER_DEFAULT = 10.0
# The fail-over search's limits live with its rules, in _proto.
FAILOVER_HOPS_MAX = _proto.FAILOVER_HOPS_MAX
FAILOVER_BACKOFF = _proto.FAILOVER_BACKOFF
FAILOVER_BACKOFF_MAX = _proto.FAILOVER_BACKOFF_MAX


class Options:
    """Where and how to connect; see Client for the meaning of each."""

    def __init__(self, host=None, port=None, *, unix_path=None,
                 endpoints=None, connect_timeout=None, command_timeout=None,
                 tls=False, tls_ca_file=None, tls_cert_file=None,
                 tls_key_file=None, tls_server_name=None, ssl_context=None,
                 token_file=None, use_env_token=True,
                 failover_timeout=_DEFAULT):
        if isinstance(host, str) and ("," in host or host.count(":") == 1
                                      or host.startswith("[")):
            # "a:7420,b:7420" (or one "a:7420"), as liblockd's host: a
            # list of endpoints.
            if endpoints is not None:
                raise ValueError("give host/port, unix_path or endpoints,"
                                 " not several")
            endpoints, host = host, None
            default_port = int(port) if port else _proto.DEFAULT_PORT
            port = None
        else:
            default_port = _proto.DEFAULT_PORT
        given = [x for x in (host is not None or port is not None,
                             unix_path is not None, endpoints is not None)
                 if x]
        if len(given) > 1:
            raise ValueError("give host/port, unix_path or endpoints,"
                             " not several")
        if endpoints is not None:
            if isinstance(endpoints, str):
                endpoints = endpoints.split(",")
            endpoints = list(endpoints)
            if not endpoints:
                raise ValueError("endpoints is empty")
            if len(endpoints) > _proto.ENDPOINTS_MAX:
                raise ValueError(f"more than {_proto.ENDPOINTS_MAX}"
                                 " endpoints")
            eps = [_proto.parse_endpoint(e, default_port)
                   for e in endpoints]
            schemes = {_proto.endpoint_scheme(e) for e in endpoints}
            if "lockds" in schemes:
                if schemes != {"lockds"}:
                    raise ValueError("lockds:// and other endpoints mixed:"
                                     " TLS is for all or none")
                tls = True
        elif unix_path is not None:
            eps = [("unix", str(unix_path))]
        else:
            eps = [(host or _proto.DEFAULT_HOST,
                    int(port) if port else _proto.DEFAULT_PORT)]
        self.endpoints = eps
        # Fail-over (see Client): on with several endpoints, for 10 s.
        if failover_timeout is _DEFAULT:
            failover_timeout = FAILOVER_DEFAULT if len(eps) > 1 else None
        self.failover_timeout = _proto.seconds(failover_timeout,
                                               "failover_timeout")
        self.connect_timeout = _proto.seconds(connect_timeout,
                                              "connect_timeout")
        self.command_timeout = _proto.seconds(command_timeout,
                                              "command_timeout")
        if (tls_ca_file or tls_cert_file or ssl_context) and not tls:
            tls = True
        if tls_key_file and not tls_cert_file:
            raise ValueError("tls_key_file without tls_cert_file")
        self.ssl_context = None
        self.tls_server_name = tls_server_name
        if tls:
            ctx = ssl_context
            if ctx is None:
                ctx = ssl.create_default_context(cafile=tls_ca_file)
                ctx.minimum_version = ssl.TLSVersion.TLSv1_2
                if tls_cert_file:
                    ctx.load_cert_chain(tls_cert_file, tls_key_file)
            self.ssl_context = ctx
        # The file is read at every connect, as liblockd's, so that a
        # rotated token is picked up without a restart; read here once
        # too, so that a missing or bad file fails at once.
        self.token_file = token_file
        self._env_token = (_proto.read_token()
                           if token_file is None and use_env_token else None)
        if token_file is not None:
            _proto.read_token(token_file)

    @property
    def token(self):
        """The token to send as AUTH now, or None."""
        if self.token_file is not None:
            return _proto.read_token(self.token_file)
        return self._env_token

    def server_hostname(self, ep):
        return self.tls_server_name or ep[0]

    def __repr__(self):
        eps = ",".join(_proto.endpoint_text(e) for e in self.endpoints)
        tls = self.ssl_context is not None
        token = ("file" if self.token_file is not None else
                 "set" if self._env_token else None)
        return f"Options(endpoints={eps!r}, tls={tls}, token={token})"
