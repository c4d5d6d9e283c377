"""Fixtures: a real lockd (LOCKD_BIN, default build/lockd) on a free
loopback port in a fresh data directory, stopped by the test and killed
by its own PID.  Every wait here is bounded."""

import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

HERE = pathlib.Path(__file__).resolve().parent
TOP = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))  # the package from this tree


def lockd_bin():
    path = os.environ.get("LOCKD_BIN") or str(TOP / "build" / "lockd")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no lockd at {path}: run make, or set LOCKD_BIN")
    return path


def faulty_bin():
    path = os.environ.get("LOCKD_FAULTY_BIN") or str(
        pathlib.Path(lockd_bin()).parent / "tests" / "lockd-faulty")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no lockd-faulty at {path}: make build/tests/lockd-faulty"
                    " or set LOCKD_FAULTY_BIN")
    return path


def small_journal(args):
    """--journal-size 65536 unless args set it (or a config file may):
    the default journal's 64 MiB are zero-filled and synced at every
    start, and no test here is about its size."""
    if "--journal-size" in args or "--config" in args:
        return []
    return ["--journal-size", "65536"]


class Lockd:
    """One lockd process.  start() again after stop()/kill() restarts it
    on the same port and data directory."""

    def __init__(self, tmp, args=(), binary=None, env=None):
        self.tmp = pathlib.Path(tmp)
        self.data = self.tmp / "data"
        self.args = list(args)
        self.binary = binary or lockd_bin()
        self.env = env
        self.port = 0
        self.proc = None
        self.starts = 0

    def start(self, timeout=10.0):
        self.starts += 1
        log = self.tmp / f"lockd.{self.starts}.log"
        with open(log, "wb") as f:
            self.proc = subprocess.Popen(
                [self.binary, "--listen", f"127.0.0.1:{self.port}",
                 "--data-dir", str(self.data), *small_journal(self.args),
                 *self.args],
                stdout=f, stderr=f,
                env=None if self.env is None else {**os.environ, **self.env})
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            text = log.read_text(errors="replace")
            m = re.search(r"listening on 127\.0\.0\.1:([0-9]+)", text)
            if m:
                self.port = int(m.group(1))
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        self.kill()
        pytest.fail(f"lockd did not start: {log.read_text()}")

    def start_again(self, timeout=10.0):
        """Restarts on the same port; the old address may take a moment
        to become free."""
        end = time.monotonic() + timeout
        while True:
            try:
                return self.start(timeout=2.0)
            except pytest.fail.Exception:
                if time.monotonic() > end:
                    raise
                time.sleep(0.1)

    def stop(self, timeout=10.0):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None


@pytest.fixture
def make_lockd(tmp_path):
    made = []

    def make(*args, binary=None, env=None, start=True):
        d = tmp_path / f"lockd{len(made)}"
        d.mkdir()
        server = Lockd(d, args, binary, env)
        made.append(server)
        return server.start() if start else server

    yield make
    for server in made:
        server.kill()


@pytest.fixture
def server(make_lockd):
    return make_lockd()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout, step=0.02):
    """True once predicate() is, False when timeout passes first."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return predicate()
