// election.go - leader election in the shape of etcd's
// concurrency.Election, with lockctl's semantics (docs/lockctl.1,
// "leader"): a candidate campaigns by acquiring the election's lock with
// its value as the owner= label and keeping the lease alive (lockctl run
// -w forever --owner VALUE NAME); the leader is the label of the lock's
// holder (lockctl leader NAME), "" when it gave none, ErrNoLeader when
// nobody holds it.

package lockd

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Election is one lock used to elect a leader among candidates.
type Election struct {
	c    *Client
	name string
	opts []AcquireOption

	mu    sync.Mutex
	lease *Lease // while this candidate leads
}

// NewElection is an election on the lock name.  opts shape each
// campaign's acquire (WithLease, WithDelay...); the default lease is
// lockd's.
func NewElection(c *Client, name string, opts ...AcquireOption) *Election {
	return &Election{c: c, name: name, opts: opts}
}

// Campaign waits until this candidate leads, with val as its public
// label, or until ctx ends.  Leadership is kept alive from then on, on a
// connection of its own, until Resign or loss (Done).
func (e *Election) Campaign(ctx context.Context, val string) error {
	opts := append(append([]AcquireOption(nil), e.opts...), WithOwner(val))
	lease, err := e.c.Acquire(ctx, e.name, opts...)
	if err != nil {
		return err
	}
	if err := lease.KeepAlive(context.Background()); err != nil {
		return err
	}
	e.mu.Lock()
	e.lease = lease
	e.mu.Unlock()
	return nil
}

// Lease is this candidate's lease while it leads (its Fence orders
// leaderships as etcd's revision does), else nil.
func (e *Election) Lease() *Lease {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lease
}

// Done is closed when this candidate's leadership is lost (not when it
// resigns); nil before it leads.
func (e *Election) Done() <-chan struct{} {
	if l := e.Lease(); l != nil {
		return l.Lost()
	}
	return nil
}

// Resign gives leadership up, if this candidate has it.
func (e *Election) Resign(ctx context.Context) error {
	e.mu.Lock()
	lease := e.lease
	e.mu.Unlock()
	if lease == nil {
		return nil
	}
	if err := lease.Release(ctx); err != nil {
		return err
	}
	e.mu.Lock()
	if e.lease == lease {
		e.lease = nil
	}
	e.mu.Unlock()
	return nil
}

// Leader is the current leader's value; ErrNoLeader when there is none.
func (e *Election) Leader(ctx context.Context) (string, error) {
	in, err := e.c.Status(ctx, e.name)
	if err != nil {
		return "", err
	}
	if !in.Held {
		return "", ErrNoLeader
	}
	return in.Owner, nil
}

// Observe sends the value of each new leader (each new fence of the
// election's lock) until ctx ends, then closes the channel.  A broken
// connection is retried; leaders that come and go in between may be
// missed, the newest never is.
func (e *Election) Observe(ctx context.Context) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		var seen uint64
		opts := []WatchOption(nil)
		for ctx.Err() == nil {
			var (
				in  LockInfo
				err error
			)
			if opts == nil {
				in, err = e.c.Status(ctx, e.name)
			} else {
				in, err = e.c.Watch(ctx, e.name, opts...)
			}
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, ErrClosed) {
					return
				}
				opts = nil
				sleep(ctx, 100*time.Millisecond)
				continue
			}
			if in.Held && in.Fence != seen {
				seen = in.Fence
				select {
				case ch <- in.Owner:
				case <-ctx.Done():
					return
				}
			}
			opts = []WatchOption{WatchFence(in.Fence)}
		}
	}()
	return ch
}
