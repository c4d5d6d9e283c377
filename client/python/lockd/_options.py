"""The options a client connects with, shared by the sync client, the
asyncio client and their keep-alives (which open connections of their own
with the same options)."""

import ssl

from . import _proto


class Options:
    """Where and how to connect; see Client for the meaning of each."""

    def __init__(self, host=None, port=None, *, unix_path=None,
                 endpoints=None, connect_timeout=None, command_timeout=None,
                 tls=False, tls_ca_file=None, tls_cert_file=None,
                 tls_key_file=None, tls_server_name=None, ssl_context=None,
                 token_file=None, use_env_token=True):
        given = [x for x in (host is not None or port is not None,
                             unix_path is not None, endpoints is not None)
                 if x]
        if len(given) > 1:
            raise ValueError("give host/port, unix_path or endpoints,"
                             " not several")
        if endpoints is not None:
            if isinstance(endpoints, str):
                endpoints = endpoints.split(",")
            eps = [_proto.parse_endpoint(e) for e in endpoints]
            if not eps:
                raise ValueError("endpoints is empty")
        elif unix_path is not None:
            eps = [("unix", str(unix_path))]
        else:
            eps = [(host or _proto.DEFAULT_HOST,
                    int(port) if port else _proto.DEFAULT_PORT)]
        self.endpoints = eps
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
