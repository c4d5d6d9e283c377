// cluster_test.go - three lockd nodes on the shared etcd: the leader
// found through NOTLEADER hints (and only among the configured
// endpoints), and kill -9 of the leader during a grant and a keep-alive.

package lockd

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestClusterFollowsTheLeaderItIsGiven(t *testing.T) {
	nodes, leader := cluster(t, 3)
	var eps []string
	for i, s := range nodes {
		if i != leader {
			eps = append(eps, s.addr())
		}
	}
	ctx := ctxT(t)
	// Followers first: the hint is followed, not the order.
	c, err := DialConfig(ctx, testConfig(append(eps, nodes[leader].addr())...))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Acquire(ctx, "go/c/redirected", WithWait(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Followers only: the leader they name is never dialed.
	cfg := testConfig(eps...)
	cfg.FailoverTimeout = time.Second
	f, err := DialConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.Try(ctx, "go/c/unconfigured")
	if !errors.Is(err, ErrNotLeader) {
		t.Fatalf("followers only: %v", err)
	}
	if in, _ := c.Status(ctx, "go/c/unconfigured"); in.Held {
		t.Fatal("granted through an endpoint that was not configured")
	}
}

func TestClusterKillOfTheLeader(t *testing.T) {
	nodes, leader := cluster(t, 3)
	eps := []string{nodes[leader].addr()}
	for i, s := range nodes {
		if i != leader {
			eps = append(eps, s.addr())
		}
	}
	ctx := ctxT(t)
	c, err := DialConfig(ctx, testConfig(eps...))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A grant whose reply the client may have missed: the same rid
	// after the fail-over finds it, granted once.
	g, err := c.Acquire(ctx, "go/c/rid", WithRID("go-rid-1"), WithLease(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := c.Acquire(ctx, "go/c/kept", WithLease(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// A keep-alive on a 10 s lease (renewed every 3.3 s) outlives a
	// fail-over of about the 2 s leader lease.
	alive, err := c.Acquire(ctx, "go/c/alive", WithLease(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := alive.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	// Kill the leader 100 ms before the keep-alive's next renewal is due,
	// so that the renewal meets the fail-over.
	due := alive.Deadline().Add(-alive.TTL() + alive.TTL()/renewDivisor)
	time.Sleep(time.Until(due.Add(-100 * time.Millisecond)))
	nodes[leader].kill()
	killed := time.Now()
	if err := kept.Renew(ctx, 20*time.Second); err != nil {
		t.Fatalf("RENEW across the fail-over: %v", err)
	}
	t.Logf("kill -9 of the leader to a RENEWED: %v",
		time.Since(killed).Round(time.Millisecond))
	again, err := c.Acquire(ctx, "go/c/rid", WithRID("go-rid-1"), WithWait(0))
	if err != nil || again.Fence() != g.Fence() || again.Handle() != g.Handle() {
		t.Fatalf("rid after the fail-over: %v (fence %d, was %d)", err,
			fenceOf(again), g.Fence())
	}
	in, err := c.Status(ctx, "go/c/rid")
	if err != nil || in.Fence != g.Fence() || in.Holders > 1 {
		t.Fatalf("granted twice? %+v %v", in, err)
	}
	// The keep-alive renews on the new leader.
	if !eventually(15*time.Second, func() bool {
		return alive.Deadline().Add(-alive.TTL()).After(killed)
	}) {
		t.Fatalf("the keep-alive did not renew after the kill: %v", alive.Err())
	}
	t.Logf("kill -9 of the leader to the keep-alive's renewal confirmed: "+
		"%v (it was due 100 ms after the kill)",
		time.Since(killed).Round(10*time.Millisecond))
	select {
	case <-alive.Lost():
		t.Fatalf("lost in the fail-over: %v", alive.Err())
	default:
	}
	// A fence granted now is above every fence before.
	n, err := c.Acquire(ctx, "go/c/kept-next", WithWait(0))
	if err != nil || n.Fence() <= alive.Fence() {
		t.Fatalf("fence went back: %v", err)
	}
	for _, l := range []*Lease{g, kept, alive, n} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	_ = context.Background
}

func fenceOf(l *Lease) uint64 {
	if l == nil {
		return 0
	}
	return l.Fence()
}
