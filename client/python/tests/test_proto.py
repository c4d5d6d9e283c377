"""The rules shared by both clients, without a server: durations, names,
endpoints and what each reply line means - among them every ERR code of
protocol v1 and v2 and the exception it becomes."""

import datetime

import pytest

import lockd
from lockd import _proto


@pytest.mark.parametrize("value,ms", [
    ("1500ms", 1500), ("30s", 30000), ("5m", 300000), ("1h", 3600000),
    ("0s", 0), (30, 30000), (1.5, 1500), (0, 0), (0.0004, 0),
    (datetime.timedelta(minutes=1), 60000), (None, None),
])
def test_durations_are_protocol_strings_or_seconds(value, ms):
    assert lockd.duration_ms(value) == ms


@pytest.mark.parametrize("value", [
    "1500", "30", "-5s", "1.5s", "30 s", "1d", "", "s", -1, -0.5,
    float("nan"), float("inf"), "366h" * 0 + "8785h", 366 * 86400,
])
def test_bad_or_ambiguous_durations_are_refused(value):
    with pytest.raises(ValueError):
        lockd.duration_ms(value)


def test_a_bool_is_not_a_duration():
    with pytest.raises(TypeError):
        lockd.duration_ms(True)


@pytest.mark.parametrize("name", ["", "a b", "a\tb", "x\x00", "a\x7f",
                                  "n" * 256, "é" * 128])
def test_bad_names_are_refused_before_sending(name):
    with pytest.raises(ValueError):
        _proto.req_status(name)


def test_a_255_byte_name_is_fine():
    assert _proto.req_status("n" * 255).line.endswith(b"\n")


@pytest.mark.parametrize("code,cls", [
    ("BADREQ", lockd.BadRequestError), ("BADARG", lockd.BadArgumentError),
    ("TOOLONG", lockd.TooLongError), ("TIMEOUT", lockd.WaitTimeoutError),
    ("CONFLICT", lockd.ConflictError), ("LIMIT", lockd.LimitError),
    ("UNAVAILABLE", lockd.UnavailableError),
    ("OVERFLOW", lockd.FenceOverflowError),
    ("SHUTDOWN", lockd.ShutdownError), ("NOTLEADER", lockd.NotLeaderError),
    ("DENIED", lockd.DeniedError),
])
def test_every_err_code_has_its_exception(code, cls):
    req = _proto.req_status("a")
    err = _proto.parse_reply(req, f"ERR {code} some text".encode())
    assert type(err) is cls
    assert isinstance(err, lockd.ServerError)
    assert isinstance(err, lockd.LockdError)
    assert err.code == code and err.text == "some text"
    assert lockd.ERROR_CLASSES[code] is cls


def test_the_error_table_covers_exactly_the_protocol_codes():
    assert sorted(lockd.ERROR_CLASSES) == sorted(
        "BADREQ BADARG TOOLONG TIMEOUT CONFLICT LIMIT UNAVAILABLE OVERFLOW"
        " SHUTDOWN NOTLEADER DENIED".split())


def test_an_unknown_err_code_is_a_plain_server_error():
    err = _proto.parse_reply(_proto.req_ping(), b"ERR NEWTHING later")
    assert type(err) is lockd.ServerError and err.code == "NEWTHING"


def test_notleader_names_its_leader():
    err = lockd.errors.error_from_reply(
        "ERR NOTLEADER leader=10.0.0.2:7420 not the leader")
    assert err.leader == ("10.0.0.2", 7420)
    assert lockd.errors.error_from_reply("ERR NOTLEADER none").leader is None


def test_connection_errors_are_builtin_connection_errors():
    assert issubclass(lockd.LockdConnectionError, ConnectionError)
    assert issubclass(lockd.CommandTimeoutError, TimeoutError)
    assert issubclass(lockd.ProtocolError, lockd.LockdConnectionError)
    assert not issubclass(lockd.WaitTimeoutError, lockd.LockdConnectionError)


def test_a_reply_for_another_lock_is_a_protocol_error():
    req = _proto.req_try("a")
    with pytest.raises(lockd.ProtocolError):
        _proto.parse_reply(req, b"GRANTED b fence=1 handle=1-0123456789abcdef"
                                b" lease=30000")
    with pytest.raises(lockd.ProtocolError):
        _proto.parse_reply(req, b"PONG")


def test_unknown_fields_are_ignored_and_kept():
    st = _proto.parse_reply(_proto.req_status("a"),
                            b"STATUS a held=1 fence=4 ttl=9 queue=0 owner=me"
                            b" future=yes")
    assert (st.held, st.fence, st.ttl_ms, st.queue, st.owner) == \
        (True, 4, 9, 0, "me")
    assert st.fields["future"] == "yes"


@pytest.mark.parametrize("text,ep", [
    ("h:1", ("h", 1)), ("h", ("h", 7420)), ("[::1]:9", ("::1", 9)),
    ("unix:/run/lockd.sock", ("unix", "/run/lockd.sock")),
    (("h", 2), ("h", 2)),
])
def test_endpoints(text, ep):
    assert _proto.parse_endpoint(text) == ep


def test_lease_from_a_saved_handle():
    lease = lockd.Lease("a", "41-8c1f0e9b2a7d4c35")
    assert lease.fence == 41
    with pytest.raises(ValueError):
        lockd.Lease("a", "41-XYZ")


def test_requests_on_the_wire():
    assert _proto.req_acquire("a", "30s", 0, "release", owner="me",
                              rid="r1").line == \
        b"ACQUIRE a lease=30000 wait=0 onclose=release owner=me rid=r1\n"
    assert _proto.req_acquire("a").line == b"ACQUIRE a\n"
    assert _proto.req_try("a", 1.5).line == b"TRY a lease=1500\n"


def test_a_token_comes_from_the_environment_or_a_file(tmp_path):
    assert _proto.read_token(env={"LOCKD_TOKEN": "s3cret"}) == "s3cret"
    assert _proto.read_token(env={}) is None
    f = tmp_path / "token"
    f.write_text("from-file\n")
    assert _proto.read_token(str(f), env={"LOCKD_TOKEN": "x"}) == "from-file"
    f.write_text("two words\n")
    with pytest.raises(ValueError):
        _proto.read_token(str(f), env={})


def test_a_notleader_hint_naming_the_node_itself_goes_to_the_next():
    eps = [("127.0.0.1", 1), ("127.0.0.1", 2), ("127.0.0.1", 3)]
    # The named leader, when configured and not the node that said it.
    assert _proto.next_endpoint(eps, 0, ("127.0.0.1", 3)) == 2
    # A node naming itself, an unknown leader or none: the next one.
    assert _proto.next_endpoint(eps, 1, ("127.0.0.1", 2)) == 2
    assert _proto.next_endpoint(eps, 2, ("10.0.0.9", 2)) == 0
    assert _proto.next_endpoint(eps, 2, None) == 0


def test_renewal_retries_back_off_from_50_ms_to_250_ms_or_a_15th():
    pauses, backoff = [], 0
    for _ in range(5):
        pause, backoff = _proto.retry_after(10_000, backoff)
        pauses.append(pause)
    assert pauses == [0.05, 0.1, 0.2, 0.25, 0.25]
    # A short lease: never more than a fifteenth of it (here 20 ms).
    assert _proto.retry_after(300, 0)[0] == 0.02
    assert _proto.retry_after(60, 0)[0] == 0.01


def test_a_failover_search_tries_each_endpoint_then_backs_off(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(_proto, "now", lambda: clock[0])
    search = _proto.FailoverSearch(1.0, 3)
    err = lockd.UnavailableError("UNAVAILABLE", "etcd cannot be reached")
    # Each of the three endpoints once at once, then 50, 100, 200, 250 ms.
    pauses = [search.pause_after(err, None) for _ in range(6)]
    assert pauses == [0.0, 0.0, 0.05, 0.1, 0.2, 0.25]
    # The fail-over time runs out: the search ends with the last error.
    clock[0] += 1.0
    with pytest.raises(lockd.UnavailableError, match="no leader answered"):
        search.pause_after(err, None)
