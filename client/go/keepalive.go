// keepalive.go - KeepAlive: a goroutine that renews one lease on a
// connection of its own, on lockctl run's schedule (see the constants in
// lease.go), over a new connection when the old one breaks, following a
// cluster's leader.  Loss is the guard's to report (lease.go): this file
// only renews, and ends the lease when lockd refuses a renewal.

package lockd

import (
	"context"
	"errors"
	"sync"
	"time"
)

type keepAlive struct {
	l      *Lease
	link   *link
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	why error // the last renewal's failure, nil after a success
}

func (k *keepAlive) stop() { k.cancel() }

func (k *keepAlive) lastError() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.why
}

func (k *keepAlive) setError(err error) {
	k.mu.Lock()
	k.why = err
	k.mu.Unlock()
}

// KeepAlive renews the lease on a goroutine until ctx ends, the lease is
// released, or it is lost: then Lost() is closed and Context() cancelled,
// in time for the work to stop before anyone else could be granted the
// lock.  It renews once before it returns (as liblockd's
// lockd_keepalive_start does), so the schedule starts from a renewal
// seen: its error, if any, is returned.
func (l *Lease) KeepAlive(ctx context.Context) error {
	l.mu.Lock()
	if l.ended {
		err := l.err
		l.mu.Unlock()
		return err
	}
	if l.keep != nil {
		l.mu.Unlock()
		return nil
	}
	k := &keepAlive{l: l, link: l.c.newLink(), done: make(chan struct{})}
	ctx, k.cancel = context.WithCancel(ctx)
	l.keep = k
	ttl := l.ttl
	l.mu.Unlock()

	first := l.c.cfg.RequestTimeout
	if ttl > 0 && ttl < first {
		first = ttl
	}
	fctx, cancel := context.WithTimeout(ctx, first)
	cl, err := k.link.attempt(fctx, k.request())
	cancel()
	if err = l.renewed(cl, err); err != nil {
		k.cancel()
		k.link.close()
		close(k.done)
		l.mu.Lock()
		l.keep = nil
		l.mu.Unlock()
		return err
	}
	go k.run(ctx)
	go func() {
		// Client.Close stops the renewals too.
		select {
		case <-l.c.closing:
			k.cancel()
		case <-ctx.Done():
		}
	}()
	return nil
}

// request is a RENEW for the lease granted, as liblockd's keep-alive
// sends (without lease= lockd would renew for its default lease).
func (k *keepAlive) request() *request {
	k.l.mu.Lock()
	ttl := k.l.ttl
	k.l.mu.Unlock()
	req := newRequest("RENEW").arg("name", k.l.name, MaxName).
		arg("handle", k.l.handle, MaxName)
	if ttl > 0 {
		req.optDuration("lease", ttl)
	}
	return req
}

func (k *keepAlive) run(ctx context.Context) {
	l := k.l
	defer close(k.done)
	defer k.link.close()
	follows := 0
	var backoff time.Duration

	l.mu.Lock()
	next := l.deadline.Add(-l.ttl + l.ttl/renewDivisor)
	l.mu.Unlock()
	for {
		l.mu.Lock()
		ttl, stop, ended := l.ttl, stopAt(l.deadline, l.ttl), l.ended
		l.mu.Unlock()
		if ended {
			return
		}
		at := next
		if at.After(stop) {
			at = stop
		}
		if !sleep(ctx, time.Until(at)) {
			return
		}
		if !time.Now().Before(stop) {
			return // the guard says it is lost
		}
		// A reply L/6 late is given up, and the renewal sent again on
		// a new connection.
		attemptEnd := time.Now().Add(ttl / stallDivisor)
		if attemptEnd.After(stop) {
			attemptEnd = stop
		}
		actx, cancel := context.WithDeadline(ctx, attemptEnd)
		cl, err := k.link.attempt(actx, k.request())
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			if err = l.renewed(cl, nil); err == nil {
				k.setError(nil)
				follows = 0
				backoff = 0
				l.mu.Lock()
				next = l.deadline.Add(-l.ttl + l.ttl/renewDivisor)
				l.mu.Unlock()
				continue
			}
		}
		k.setError(err)
		var retry time.Duration
		retry, backoff = retryAfter(ttl, backoff)
		var de *dialError
		switch {
		case errors.Is(err, ErrNotLeader):
			// attempt moved the link to the leader named, or on.
			if follows++; follows <= followAtOnce {
				next = time.Now()
			} else {
				next = time.Now().Add(retry)
			}
		case errors.Is(err, ErrUnavailable) || errors.Is(err, ErrLimit):
			next = time.Now().Add(retry)
		case errors.As(err, &de):
			next = time.Now().Add(retry)
		case errors.Is(err, context.DeadlineExceeded),
			errors.Is(err, ErrConnection), errors.Is(err, ErrShutdown),
			errors.Is(err, ErrProtocol):
			// Broken, stalled or stopping: a new connection, at once.
			k.link.close()
			next = time.Now()
		default:
			// A refusal: l.renewed has ended the lease.
			l.renewed(nil, err)
			return
		}
	}
}
