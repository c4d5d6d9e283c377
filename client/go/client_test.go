// client_test.go - every call against one real lockd: the commands, the
// options of ACQUIRE and TRY, pipelining, withdrawing a wait, kill -9 and
// restart, and keep-alive loss.

package lockd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestEveryCallAgainstOneLockd(t *testing.T) {
	s := startLockd(t)
	c := dial(t, s)
	ctx := ctxT(t)

	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	help, err := c.Help(ctx)
	if err != nil || !strings.Contains(help, "ACQUIRE") {
		t.Fatalf("HELP: %q %v", help, err)
	}
	a, err := c.Acquire(ctx, "go/every", WithLease(10*time.Second),
		WithOwner("me:1"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Fence() == 0 || !strings.HasPrefix(a.Handle(), fmt.Sprint(a.Fence())+"-") ||
		a.TTL() != 10*time.Second || time.Until(a.Deadline()) > 10*time.Second {
		t.Fatalf("lease %d %s %v", a.Fence(), a.Handle(), a.TTL())
	}
	_, err = c.Try(ctx, "go/every")
	var held *HeldError
	if !errors.Is(err, ErrHeld) || !errors.As(err, &held) || held.Name != "go/every" {
		t.Fatalf("TRY of a held lock: %v", err)
	}
	if _, err = c.Acquire(ctx, "go/every", WithWait(0)); !errors.Is(err, ErrTimeout) {
		t.Fatalf("ACQUIRE wait=0 of a held lock: %v", err)
	}
	in, err := c.Status(ctx, "go/every")
	if err != nil || !in.Held || in.Fence != a.Fence() || in.Owner != "me:1" ||
		in.TTL <= 0 || in.Queue != 0 {
		t.Fatalf("STATUS: %+v %v", in, err)
	}
	if err := a.Renew(ctx, 20*time.Second); err != nil || a.TTL() != 20*time.Second {
		t.Fatalf("RENEW: %v %v", err, a.TTL())
	}
	res, err := c.Check(ctx, "go/every", a.Fence())
	if err != nil || !res.Current || res.Fence != a.Fence() || res.TTL <= 0 {
		t.Fatalf("CHECK: %+v %v", res, err)
	}
	res, err = c.Check(ctx, "go/every", a.Fence()+100)
	if err != nil || res.Current || res.Fence != a.Fence() {
		t.Fatalf("CHECK of a stale fence: %+v %v", res, err)
	}
	// LIST, in pages.
	for i := 0; i < 3; i++ {
		if _, err := c.Try(ctx, fmt.Sprintf("go/list/%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	page, next, err := c.List(ctx, ListOptions{Prefix: "go/list/", Limit: 2})
	if err != nil || len(page) != 2 || next != "go/list/1" || page[0].Name != "go/list/0" {
		t.Fatalf("LIST: %+v %q %v", page, next, err)
	}
	page, next, err = c.List(ctx, ListOptions{Prefix: "go/list/", After: next})
	if err != nil || len(page) != 1 || next != "" || page[0].Name != "go/list/2" {
		t.Fatalf("LIST page 2: %+v %q %v", page, next, err)
	}
	// WATCH: at once from another fence; the next change otherwise.
	in, err = c.Watch(ctx, "go/every", WatchFence(0))
	if err != nil || in.Fence != a.Fence() || in.Cause != "granted" {
		t.Fatalf("WATCH fence=0: %+v %v", in, err)
	}
	if _, err = c.Watch(ctx, "go/every", WatchWait(0)); !errors.Is(err, ErrTimeout) {
		t.Fatalf("WATCH wait=0: %v", err)
	}
	watched := make(chan LockInfo, 1)
	go func() {
		in, err := c.Watch(ctx, "go/every", WatchFence(a.Fence()))
		if err != nil {
			t.Error(err)
		}
		watched <- in
	}()
	// The WATCH must be waiting before the FORCE, or it would be answered
	// at once with the state after it (cause=none): STATS counts it.
	for deadline := time.Now().Add(5 * time.Second); ; {
		st, err := c.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Int("watches") >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the WATCH never reached lockd")
		}
		time.Sleep(time.Millisecond)
	}
	// FORCE: never a holder with another fence.
	if ok, err := c.Force(ctx, "go/every", a.Fence()+1); ok || err != nil {
		t.Fatalf("FORCE of another fence: %v %v", ok, err)
	}
	if ok, err := c.Force(ctx, "go/every", a.Fence()); !ok || err != nil {
		t.Fatalf("FORCE: %v %v", ok, err)
	}
	if in := <-watched; in.Held || in.Cause != "forced" {
		t.Fatalf("WATCH saw %+v", in)
	}
	// The forced holder's renewal is refused, and the lease is lost.
	if err := a.Renew(ctx, 0); !errors.Is(err, ErrConflict) {
		t.Fatalf("RENEW after FORCE: %v", err)
	}
	select {
	case <-a.Lost():
	default:
		t.Fatal("a refused renewal did not lose the lease")
	}
	if a.Context().Err() == nil || !errors.Is(a.Err(), ErrLost) {
		t.Fatalf("lost lease: %v %v", a.Context().Err(), a.Err())
	}
	// RELEASE twice: RELEASED, then NOTHELD, both success.
	b, err := c.Try(ctx, "go/every", WithDelay(time.Second))
	if err != nil || b.Fence() <= a.Fence() {
		t.Fatalf("TRY after FORCE: %v", err)
	}
	if err := b.Release(ctx); err != nil || b.Release(ctx) != nil {
		t.Fatalf("RELEASE: %v", err)
	}
	if b.Context().Err() == nil || !errors.Is(b.Err(), ErrReleased) {
		t.Fatal("a released lease's context still runs")
	}
	select {
	case <-b.Lost():
		t.Fatal("a release lost the lease")
	default:
	}
	// A semaphore and a shared lock.
	s1, err := c.Acquire(ctx, "go/sem", WithLimit(2))
	s2, err2 := c.Acquire(ctx, "go/sem", WithLimit(2))
	if err != nil || err2 != nil || s2.Fence() <= s1.Fence() {
		t.Fatalf("semaphore: %v %v", err, err2)
	}
	if _, err := c.Try(ctx, "go/sem", WithLimit(2)); !errors.Is(err, ErrHeld) {
		t.Fatalf("third of two: %v", err)
	}
	if _, err := c.Try(ctx, "go/sem", WithLimit(3)); !errors.Is(err, ErrBadArg) {
		t.Fatalf("another limit: %v", err)
	}
	in, _ = c.Status(ctx, "go/sem")
	if in.Holders != 2 || in.Limit != 2 {
		t.Fatalf("semaphore STATUS %+v", in)
	}
	r1, err := c.Acquire(ctx, "go/rw", WithMode(Shared))
	r2, err2 := c.Acquire(ctx, "go/rw", WithMode(Shared))
	if err != nil || err2 != nil {
		t.Fatalf("shared: %v %v", err, err2)
	}
	if in, _ = c.Status(ctx, "go/rw"); !in.Shared || in.Holders != 2 {
		t.Fatalf("shared STATUS %+v", in)
	}
	for _, l := range []*Lease{s1, s2, r1, r2} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A rid repeated finds the same grant.
	g1, err := c.Acquire(ctx, "go/rid", WithRID("job-1"))
	g2, err2 := c.Acquire(ctx, "go/rid", WithRID("job-1"))
	if err != nil || err2 != nil || g1.Handle() != g2.Handle() {
		t.Fatalf("rid: %v %v", err, err2)
	}
	st, err := c.Stats(ctx)
	if err != nil || st.Int("granted") < 5 || st["connections"] == "" {
		t.Fatalf("STATS: %v %v", st, err)
	}
	// Bad input from the caller never reaches the wire.
	for _, name := range []string{"", "a b", "a\nPING", strings.Repeat("x", 256)} {
		if _, err := c.Try(ctx, name); !errors.Is(err, ErrBadArg) {
			t.Fatalf("name %q: %v", name, err)
		}
	}
	if _, err := c.Try(ctx, "go/x", WithLease(-time.Second)); !errors.Is(err, ErrBadArg) {
		t.Fatalf("negative lease: %v", err)
	}
	if _, err := c.Try(ctx, "go/x", WithOwner("a b")); !errors.Is(err, ErrBadArg) {
		t.Fatalf("owner with a space: %v", err)
	}
	// The server's own BADARG comes back typed.
	if _, err = c.Try(ctx, "go/x", WithMode(Shared), WithLimit(3)); !errors.Is(err, ErrBadArg) {
		t.Fatalf("shared with a limit: %v", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != "BADARG" || e.Text == "" {
		t.Fatalf("typed error: %#v", err)
	}
}

func TestPipelinedRequestsAreAnsweredInOrder(t *testing.T) {
	s := startLockd(t)
	c := dial(t, s)
	ctx := ctxT(t)
	const n = 1000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := fmt.Sprintf("go/pipe/%d", i)
			var err error
			if i%2 == 0 {
				var l *Lease
				if l, err = c.Try(ctx, name, WithOwner(fmt.Sprint(i))); err == nil {
					var in LockInfo
					in, err = c.Status(ctx, name)
					if err == nil && (in.Name != name || in.Fence != l.Fence() ||
						in.Owner != fmt.Sprint(i)) {
						err = fmt.Errorf("%s: STATUS %+v", name, in)
					}
				}
			} else {
				var in LockInfo
				in, err = c.Status(ctx, name)
				if err == nil && (in.Name != name || in.Held) {
					err = fmt.Errorf("%s: STATUS %+v", name, in)
				}
			}
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d goroutines, %d requests on one connection in %v", n, n+n/2,
		time.Since(start))
	// One connection served them all (STATS's own included).
	if st, err := c.Stats(ctx); err != nil || st.Int("connections") != 1 {
		t.Fatalf("connections: %v %v", st["connections"], err)
	}
}

func TestCancelledWaitWithdrawsItsAcquire(t *testing.T) {
	s := startLockd(t)
	c := dial(t, s)
	ctx := ctxT(t)
	held, err := c.Acquire(ctx, "go/cancel", WithLease(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := c.Acquire(wctx, "go/cancel")
		done <- err
	}()
	if !eventually(5*time.Second, func() bool {
		in, _ := c.Status(ctx, "go/cancel")
		return in.Queue == 1
	}) {
		t.Fatal("the waiter never queued")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ACQUIRE: %v", err)
	}
	if in, _ := c.Status(ctx, "go/cancel"); in.Queue != 0 {
		t.Fatalf("the withdrawn waiter still queues: %+v", in)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if in, _ := c.Status(ctx, "go/cancel"); in.Held {
		t.Fatalf("granted to a withdrawn waiter: %+v", in)
	}
	// A context deadline becomes the wait: lockd ends it itself.
	held, _ = c.Acquire(ctx, "go/cancel")
	dctx, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	_, err = c.Acquire(dctx, "go/cancel")
	if !errors.Is(err, ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ACQUIRE past its deadline: %v", err)
	}
	if in, _ := c.Status(ctx, "go/cancel"); in.Queue != 0 {
		t.Fatalf("a timed-out waiter still queues: %+v", in)
	}
	held.Release(ctx)
}

func TestKillAndRestartKeepTheLeaseAndTheFences(t *testing.T) {
	s := startLockd(t)
	c := dial(t, s)
	ctx := ctxT(t)
	l, err := c.Acquire(ctx, "go/crash", WithLease(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := c.Acquire(ctx, "go/crash-kept", WithLease(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := kept.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	s.kill()
	s.start()
	// The same client, its connection broken: a repeatable request is
	// sent again on a new one.
	in, err := c.Status(ctx, "go/crash")
	if err != nil || !in.Held || in.Fence != l.Fence() {
		t.Fatalf("after kill -9: %+v %v", in, err)
	}
	if err := l.Renew(ctx, 0); err != nil {
		t.Fatalf("RENEW after the restart: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := c.Acquire(ctx, "go/crash")
	if err != nil || again.Fence() <= l.Fence() {
		t.Fatalf("a fence went back: %d after %d (%v)", again.Fence(), l.Fence(), err)
	}
	// The keep-alive renewed across the restart.
	renewedAfter := time.Now()
	if !eventually(5*time.Second, func() bool {
		return kept.Deadline().Sub(renewedAfter) >= 3*time.Second
	}) {
		t.Fatalf("no renewal after the restart: %v", kept.Err())
	}
	select {
	case <-kept.Lost():
		t.Fatalf("lost across a restart: %v", kept.Err())
	default:
	}
	if err := kept.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestKeepAliveLossCancelsTheContextBeforeTheLeaseEnds(t *testing.T) {
	s := startLockd(t)
	c := dial(t, s)
	ctx := ctxT(t)
	const lease = 1500 * time.Millisecond
	l, err := c.Acquire(ctx, "go/loss", WithLease(lease))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	// Renewals go on while lockd answers.
	time.Sleep(lease)
	select {
	case <-l.Lost():
		t.Fatalf("lost while lockd answers: %v", l.Err())
	default:
	}
	s.kill() // and not restarted: no renewal can succeed
	select {
	case <-l.Context().Done():
	case <-time.After(3 * lease):
		t.Fatal("the holder's context was never cancelled")
	}
	stopped := time.Now()
	<-l.Lost()
	if !errors.Is(l.Err(), ErrLost) {
		t.Fatalf("why: %v", l.Err())
	}
	// lockctl's SIGTERM point: L/6 + L/10 before the lease could end, as
	// the last renewal lockd confirmed set it (one answered just before
	// the kill counts: its reply may be read after kill returns).
	margin := l.Deadline().Sub(stopped)
	if margin < lease/10 {
		t.Fatalf("context cancelled %v before the lease's end (want >= %v)",
			margin, lease/10)
	}
	t.Logf("loss told %v before the lease could end (L/6+L/10 = %v): %v",
		margin.Round(time.Millisecond), lease/6+lease/10, l.Err())
}

func TestKeepAliveLossByConflict(t *testing.T) {
	s := startLockd(t)
	c := dial(t, s)
	ctx := ctxT(t)
	l, err := c.Acquire(ctx, "go/conflict", WithLease(900*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Force(ctx, "go/conflict", l.Fence()); !ok || err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
	case <-time.After(2 * time.Second):
		t.Fatal("a refused renewal was not reported")
	}
	if !errors.Is(l.Err(), ErrConflict) || l.Context().Err() == nil {
		t.Fatalf("why: %v", l.Err())
	}
}

func TestUnixSocket(t *testing.T) {
	dir := t.TempDir()
	sock := dir + "/lockd.sock"
	s := startLockd(t, "--unix", sock)
	_ = s
	for _, cfg := range []Config{{UnixSocket: sock}, {Endpoints: []string{"lockd://" + sock}}} {
		c, err := DialConfig(ctxT(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.Acquire(ctxT(t), "go/unix")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
}

func TestElection(t *testing.T) {
	s := startLockd(t)
	c1, c2 := dial(t, s), dial(t, s)
	ctx := ctxT(t)
	e1 := NewElection(c1, "go/election", WithLease(3*time.Second))
	e2 := NewElection(c2, "go/election", WithLease(3*time.Second))
	if _, err := e1.Leader(ctx); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("leader of nobody: %v", err)
	}
	octx, stop := context.WithCancel(ctx)
	defer stop()
	seen := e2.Observe(octx)
	if err := e1.Campaign(ctx, "10.0.0.1:80"); err != nil {
		t.Fatal(err)
	}
	if v := <-seen; v != "10.0.0.1:80" {
		t.Fatalf("observed %q", v)
	}
	won := make(chan error, 1)
	go func() { won <- e2.Campaign(ctx, "10.0.0.2:80") }()
	if v, err := e2.Leader(ctx); v != "10.0.0.1:80" || err != nil {
		t.Fatalf("leader: %q %v", v, err)
	}
	first := e1.Lease().Fence()
	if err := e1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-won; err != nil {
		t.Fatal(err)
	}
	if v := <-seen; v != "10.0.0.2:80" {
		t.Fatalf("observed %q", v)
	}
	if e2.Lease().Fence() <= first || e1.Lease() != nil {
		t.Fatal("leaderships out of order")
	}
	select {
	case <-e2.Done():
		t.Fatal("leadership lost")
	default:
	}
	e2.Resign(ctx)
}

func TestOnCloseReleaseLeaseKeepsItsConnection(t *testing.T) {
	s := startLockd(t)
	c := dial(t, s)
	ctx := ctxT(t)
	l, err := c.Acquire(ctx, "go/onclose", WithOnCloseRelease())
	if err != nil {
		t.Fatal(err)
	}
	// Its connection is its own: not one for other waiting requests to
	// take (and close when the client keeps enough).
	c.mu.Lock()
	pooled := len(c.idle)
	c.mu.Unlock()
	if l.bound == nil || pooled != 0 {
		t.Fatalf("the lease's connection went back to the pool")
	}
	for i := 0; i < 6; i++ {
		if _, err := c.Watch(ctx, "go/onclose", WatchFence(0)); err != nil {
			t.Fatal(err)
		}
	}
	if in, _ := c.Status(ctx, "go/onclose"); !in.Held || in.Fence != l.Fence() {
		t.Fatalf("an onclose=release lease ended early: %+v", in)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if in, _ := c.Status(ctx, "go/onclose"); in.Held {
		t.Fatalf("still held: %+v", in)
	}
	// Its connection closing ends it, and the holder is told.
	l, err = c.Try(ctx, "go/onclose", WithOnCloseRelease())
	if err != nil {
		t.Fatal(err)
	}
	l.bound.close()
	select {
	case <-l.Lost():
	case <-time.After(2 * time.Second):
		t.Fatal("a closed onclose=release connection did not lose the lease")
	}
	if !eventually(2*time.Second, func() bool {
		in, _ := c.Status(ctx, "go/onclose")
		return !in.Held
	}) {
		t.Fatal("lockd kept a lease whose connection closed")
	}
	// Client.Close ends such leases too.
	other := dial(t, s)
	l, err = c.Try(ctx, "go/onclose", WithOnCloseRelease())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	<-l.Lost()
	if !eventually(2*time.Second, func() bool {
		in, _ := other.Status(ctx, "go/onclose")
		return !in.Held
	}) {
		t.Fatal("Close left an onclose=release lease held")
	}
}
