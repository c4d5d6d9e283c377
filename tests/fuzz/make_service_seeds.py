#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_service (tests/fuzz/corpus/service/).

Each seed is a small scenario in the target's input encoding (see the
comment at the top of tests/fuzz/fuzz_service.c): three configuration
bytes, then operations.  Run from the repository root; the seeds are
checked in, so this is only needed when the encoding changes.
"""
import os

(ACQUIRE, TRY, RENEW, RELEASE, STATUS, PING, QUIT, HELP, STATS, FORCE, CHECK,
 WATCH, LIST, AUTH) = range(14)


def op(code, c=0, extra=0):
    return bytes([((c & 3) << 4) | code | extra])


def opn(c): return op(0, c)
def close(c): return op(1, c)
def raw(c, data): return op(2, c) + bytes([len(data)]) + data


def req(c, cmd, name=0, lease=0, wait=0, onclose=None, handle=0, style=0):
    o = lease | (wait << 3)
    if onclose is not None:
        o |= 0x40 | (0x80 if onclose else 0)
    return op(3, c) + bytes([cmd, name, o, handle, style])


# The kind of lock an ACQUIRE or TRY asks for, in its handle byte (see
# kind_options in fuzz_service.c): limit= by index into
# (none, 1, 2, 3, 4, 2, 0, 65536), mode= (none, exclusive, shared, bogus),
# rid= (none, r1, r2, c<connection>).
LIMIT = {None: 0, 1: 1, 2: 2, 3: 3, 4: 4, 0: 6, 65536: 7}
MODE = {None: 0, 'exclusive': 1, 'shared': 2, 'bogus': 3}
RID = {None: 0, 'r1': 1, 'r2': 2, 'own': 3}


def kind(limit=None, mode=None, rid=None):
    return LIMIT[limit] | (MODE[mode] << 3) | (RID[rid] << 5)


def feed(c, n=0): return op(5, c) + bytes([n])
def adv(ms): return op(6) + bytes([ms])
def advbig(k): return op(7) + bytes([k])
def tick(): return op(8)
def endp(): return op(9)
def commit(): return op(10)
def fault(b): return op(11) + bytes([b])
def read(c, n=0): return op(12, c) + bytes([n])
def wall(b): return op(13) + bytes([b])
def restart(clean, reboot=False):
    return op(14, 0, (0x40 if clean else 0) | (0x80 if reboot else 0))
def commit_if_due(): return op(4)
def half_close(c): return op(1, c, 0x40)
def pass_(): return op(15)


cfg = bytes([0x0b, 0x00, 0x00])   # lease 2000 ms, max 2100 ms
seeds = {
    'contend': cfg + opn(0) + opn(1) + req(0, ACQUIRE, 0, lease=5) + feed(0)
    + pass_() + req(1, ACQUIRE, 0, wait=5) + feed(1) + pass_() + advbig(3)
    + pass_() + req(0, RELEASE, 0) + feed(0) + pass_() + req(1, STATUS, 0)
    + feed(1) + pass_() + advbig(40) + pass_(),
    'pipeline': cfg + opn(0)
    + b''.join(req(0, c, 1, lease=4)
               for c in (ACQUIRE, TRY, STATUS, PING, HELP, STATS))
    + req(0, RENEW, 1) + req(0, RELEASE, 1) + feed(0, 7) + feed(0, 30)
    + feed(0) + pass_() + pass_(),
    'store-fail': cfg + opn(0) + opn(1) + fault(3) + req(0, ACQUIRE, 2, lease=6)
    + feed(0) + pass_() + pass_() + req(1, TRY, 2) + feed(1) + pass_()
    + fault(2) + req(0, ACQUIRE, 2) + feed(0) + pass_() + fault(2) + pass_(),
    'crash': cfg + opn(0) + req(0, ACQUIRE, 0, lease=6)
    + req(0, TRY, 1, lease=5, onclose=True) + feed(0) + pass_()
    + restart(False) + opn(1) + req(1, STATUS, 0) + req(1, STATUS, 1)
    + feed(1) + pass_() + wall(200) + restart(True) + opn(2)
    + req(2, STATUS, 0) + feed(2) + pass_(),
    'clean-stop': cfg + opn(0) + opn(1) + req(0, ACQUIRE, 0) + feed(0)
    + pass_() + req(1, ACQUIRE, 0) + feed(1) + pass_() + restart(True)
    + opn(0) + req(0, STATUS, 0) + feed(0) + pass_(),
    'garbage': bytes([0x40, 0, 0]) + opn(0)
    + raw(0, b'ACQUIRE\x00x\nTRY a lease=-5\nRELEASE a 0-0\nFOO\n'
          + b'x' * 80 + b'\nPING\r\n')
    + feed(0, 3) + feed(0) + pass_() + raw(0, b'A' * 100) + feed(0)
    + raw(0, b'\nPING\n') + feed(0) + pass_(),
    'no-reader': bytes([0x30, 0, 0]) + opn(0) + opn(1)
    + b''.join(req(0, HELP) for _ in range(12)) + feed(0) + endp()
    + req(1, PING) + feed(1) + pass_() + read(0, 10) + pass_(),
    'timeouts': cfg + opn(0) + opn(1) + opn(2) + req(0, ACQUIRE, 3, lease=6)
    + feed(0) + pass_() + req(1, ACQUIRE, 3, wait=3)
    + req(2, ACQUIRE, 3, wait=4) + feed(1) + feed(2) + pass_() + adv(20)
    + tick() + pass_() + adv(100) + pass_()
    + req(0, RENEW, 3, lease=2) + feed(0) + pass_(),
    'overflow': bytes([0x0b, 0, 0x07]) + opn(0)
    + b''.join(req(0, TRY, i % 5, lease=2) for i in range(10)) + feed(0)
    + pass_(),
    'limits': bytes([0x0b, 0x15, 0]) + opn(0) + opn(1)
    + b''.join(req(0, TRY, i) for i in range(4)) + feed(0) + pass_()
    + b''.join(req(1, ACQUIRE, i) for i in range(4)) + feed(1) + pass_(),
    'onclose': cfg + opn(0) + opn(1) + req(0, ACQUIRE, 0, onclose=True)
    + feed(0) + pass_() + req(1, ACQUIRE, 0) + feed(1) + pass_() + close(0)
    + pass_() + req(1, STATUS, 0) + feed(1) + pass_(),
    'alloc-fail': cfg + opn(0) + fault(12) + req(0, ACQUIRE, 0)
    + req(0, ACQUIRE, 1) + feed(0) + pass_() + fault(8) + req(0, TRY, 2)
    + feed(0) + pass_(),
    'wall-steps': cfg + opn(0) + req(0, ACQUIRE, 0, lease=6) + feed(0)
    + pass_() + wall(255) + restart(False) + wall(0) + opn(0)
    + req(0, STATUS, 0) + feed(0) + pass_() + adv(200) + pass_(),
    'quit': cfg + opn(0) + opn(1) + req(1, ACQUIRE, 0) + feed(1) + pass_()
    + req(0, ACQUIRE, 0) + req(0, QUIT) + req(0, PING) + feed(0) + pass_()
    + advbig(200) + pass_(),
    'reboot': cfg + opn(0) + req(0, ACQUIRE, 0, lease=6) + feed(0) + pass_()
    + req(0, TRY, 1, lease=5) + feed(0) + pass_() + wall(140)
    + restart(False, reboot=True) + opn(1) + req(1, STATUS, 0)
    + req(1, STATUS, 1) + feed(1) + pass_() + advbig(40) + pass_(),
    'half-close': cfg + opn(0) + opn(1) + req(0, TRY, 2) + req(0, PING)
    + feed(0) + half_close(0) + pass_() + req(1, ACQUIRE, 2, wait=6)
    + feed(1) + half_close(1) + pass_(),
    # --auth on (b1 = 0x40): tokens "a" (p1: all on lock/) and "b" (p2:
    # lock, read on "a"); names 0 "a", 1 "b", 2 "lock/c", 3 "\u00e9t\u00e9".
    'auth': bytes([0x0b, 0x40, 0x00]) + opn(0) + opn(1) + opn(2)
    + req(0, AUTH, 0) + req(0, ACQUIRE, 2, lease=5) + req(0, TRY, 0)
    + req(0, STATS) + feed(0) + pass_()
    + req(1, STATUS, 0) + req(1, AUTH, 1) + req(1, TRY, 0) + req(1, STATS)
    + req(1, TRY, 2) + feed(1) + pass_()
    + req(2, AUTH, 3) + req(2, AUTH, 2) + req(2, AUTH, 4) + req(2, PING)
    + feed(2) + pass_() + req(0, RELEASE, 2) + feed(0) + pass_()
    + advbig(40) + pass_(),
    # rid=: a grant repeated from another connection, and across a crash;
    # a waiter superseded by its repeat; a bad rid.
    'rid': cfg + opn(0) + opn(1) + opn(2)
    + raw(0, b'ACQUIRE a lease=1500 rid=r1 onclose=release\n') + feed(0)
    + pass_() + raw(1, b'ACQUIRE a rid=r1\nTRY a rid=r1\n') + feed(1)
    + pass_() + raw(2, b'ACQUIRE a rid=w wait=900\n') + feed(2) + pass_()
    + raw(1, b'ACQUIRE a rid=w\nACQUIRE b rid=\nTRY b rid=w rid=x\n')
    + feed(1) + pass_() + close(0) + pass_() + restart(False) + opn(0)
    + raw(0, b'ACQUIRE a rid=r1 wait=0\n') + feed(0) + pass_()
    + advbig(40) + pass_(),
    # Issue 17's kinds of lock.  A 3-permit semaphore: two hold, a third
    # joins, a fourth waits for a release; STATUS, LIST and WATCH show it.
    'semaphore': cfg + opn(0) + opn(1) + opn(2) + opn(3)
    + req(0, ACQUIRE, 0, lease=5, handle=kind(3))
    + req(1, ACQUIRE, 0, lease=5, handle=kind(3)) + feed(0) + feed(1)
    + pass_() + req(2, TRY, 0, lease=5, handle=kind(3))
    + req(3, ACQUIRE, 0, wait=5, handle=kind(3)) + req(3, STATUS, 0)
    + feed(2) + feed(3) + pass_()
    + req(2, WATCH, 0, wait=4) + req(2, LIST) + feed(2)
    + req(0, RELEASE, 0, handle=0) + feed(0) + pass_() + advbig(3)
    + req(1, STATUS, 0) + feed(1) + pass_() + advbig(60) + pass_(),
    # Readers and a writer: two readers hold, a writer waits, a reader
    # behind it waits too; the readers go, the writer, then the reader.
    'readers-writer': cfg + opn(0) + opn(1) + opn(2) + opn(3)
    + req(0, ACQUIRE, 1, lease=5, handle=kind(mode='shared'))
    + req(1, ACQUIRE, 1, lease=5, handle=kind(1, 'shared')) + feed(0)
    + feed(1) + pass_()
    + req(2, ACQUIRE, 1, lease=5, wait=6, handle=kind(mode='exclusive'))
    + feed(2) + pass_()
    + req(3, ACQUIRE, 1, wait=6, handle=kind(mode='shared'))
    + req(3, STATUS, 1) + feed(3) + pass_()
    + req(0, RELEASE, 1, handle=4) + req(1, RELEASE, 1, handle=0)
    + feed(0) + feed(1) + pass_() + req(3, LIST) + feed(3) + pass_()
    + advbig(40) + pass_() + advbig(200) + pass_(),
    # Kinds that do not fit: another limit (or none) on a semaphore,
    # shared on it, shared with a limit, limits out of range, a bad mode.
    'kind-misfit': cfg + opn(0) + opn(1)
    + req(0, ACQUIRE, 2, lease=6, handle=kind(2)) + feed(0) + pass_()
    + req(1, TRY, 2, handle=kind()) + req(1, TRY, 2, handle=kind(3))
    + req(1, TRY, 2, handle=kind(2, 'shared'))
    + req(1, TRY, 2, handle=kind(1, 'shared'))
    + req(1, ACQUIRE, 2, handle=kind(0)) + req(1, TRY, 2, handle=kind(65536))
    + req(1, ACQUIRE, 2, handle=kind(mode='bogus'))
    + req(1, TRY, 2, handle=kind(2)) + req(1, STATUS, 2) + feed(1)
    + pass_() + req(0, ACQUIRE, 3, handle=kind(mode='shared'))
    + req(0, TRY, 3, handle=kind(2)) + req(0, TRY, 3, handle=kind(1))
    + req(0, STATUS, 3) + feed(0) + pass_() + advbig(60) + pass_(),
    # rid repeats of a permit and of a read hold, from other connections,
    # one of the wrong limit, one of the wrong mode, across a crash.
    'kind-rid': cfg + opn(0) + opn(1) + opn(2)
    + req(0, ACQUIRE, 0, lease=6, onclose=True, handle=kind(2, None, 'r1'))
    + req(0, ACQUIRE, 1, lease=6, handle=kind(1, 'shared', 'r2'))
    + feed(0) + req(1, TRY, 0, handle=kind(2, None, 'r1'))
    + req(1, ACQUIRE, 0, handle=kind(3, None, 'r1'))
    + req(1, ACQUIRE, 1, handle=kind(None, 'exclusive', 'r2'))
    + req(1, TRY, 1, handle=kind(None, 'shared', 'r2')) + feed(1)
    + pass_() + req(2, ACQUIRE, 0, wait=5, handle=kind(2, None, 'own'))
    + req(2, ACQUIRE, 0, wait=5, handle=kind(2, None, 'own')) + feed(2)
    + pass_() + close(0) + pass_() + restart(False) + opn(0)
    + req(0, TRY, 1, handle=kind(mode='shared', rid='r2'))
    + req(0, STATUS, 0) + req(0, STATUS, 1) + feed(0) + pass_()
    + advbig(60) + pass_(),
    # Failed commits under holder sets: a batch that grants permits and
    # queues one more fails; one that releases the last permit and grants
    # a plain lock fails (the restore must not hand the plain waiter a
    # permit); then readers across a failed commit and a crash.
    'kind-fail': cfg + opn(0) + opn(1) + opn(2)
    + req(0, ACQUIRE, 3, lease=6, handle=kind(2)) + feed(0) + pass_()
    + fault(1) + req(1, ACQUIRE, 3, handle=kind(2))
    + req(2, ACQUIRE, 3, wait=5, handle=kind(2)) + feed(1) + feed(2)
    + pass_() + pass_() + req(0, RELEASE, 3, handle=0)
    + req(1, ACQUIRE, 3, handle=kind()) + req(2, ACQUIRE, 3, wait=5)
    + fault(1) + feed(0) + feed(1) + feed(2) + pass_() + pass_()
    + req(1, STATUS, 3) + feed(1) + pass_() + fault(12)
    + req(0, ACQUIRE, 1, handle=kind(mode='shared'))
    + req(1, ACQUIRE, 1, handle=kind(mode='shared')) + feed(0) + feed(1)
    + pass_() + restart(False) + opn(0) + req(0, STATUS, 1) + feed(0)
    + pass_() + advbig(60) + pass_(),
}

out = 'tests/fuzz/corpus/service'
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(data)
print(f'{len(seeds)} seeds in {out}')
