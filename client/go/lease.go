// lease.go - ACQUIRE and TRY, and the *Lease they grant: its fence and
// handle, RENEW and RELEASE, and the guard that tells the holder's work
// to stop (Lost, Context) before the lease could pass to anyone else.

package lockd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"time"
)

// Mode is a lock's kind of holding.
type Mode int

// The modes of mode=.
const (
	Exclusive Mode = iota
	Shared
)

// AcquireOption shapes an Acquire or a Try.
type AcquireOption func(*acquireOptions)

type acquireOptions struct {
	lease, wait, delay time.Duration
	hasWait            bool
	owner, rid         string
	limit              int
	mode               Mode
	onCloseRelease     bool
}

// WithLease asks for a lease of d (0: the server's default; capped at
// its maximum).
func WithLease(d time.Duration) AcquireOption {
	return func(o *acquireOptions) { o.lease = d }
}

// WithWait bounds the wait in the queue (then ErrTimeout); 0 fails at
// once unless the lock is free.  Without it Acquire waits until ctx ends
// (or until ctx's deadline, which is sent as the wait).
func WithWait(d time.Duration) AcquireOption {
	return func(o *acquireOptions) { o.wait, o.hasWait = d, true }
}

// WithOwner labels the holder (owner=, public, proves nothing).
func WithOwner(label string) AcquireOption {
	return func(o *acquireOptions) { o.owner = label }
}

// WithLimit makes the name a counting semaphore of n holders.
func WithLimit(n int) AcquireOption {
	return func(o *acquireOptions) { o.limit = n }
}

// WithMode asks for a shared (read) or exclusive hold.
func WithMode(m Mode) AcquireOption {
	return func(o *acquireOptions) { o.mode = m }
}

// WithDelay sets a lock-delay for when this lease ends badly.
func WithDelay(d time.Duration) AcquireOption {
	return func(o *acquireOptions) { o.delay = d }
}

// WithRID names the request (rid=).  By default every Acquire and Try
// makes a random one, so that sending it again after a broken connection
// or a fail-over finds its own grant instead of a second one.
func WithRID(rid string) AcquireOption {
	return func(o *acquireOptions) { o.rid = rid }
}

// WithOnCloseRelease binds the lease to the connection it was granted on
// (onclose=release).  That connection is the lease's alone: Release
// closes it, and the lease ends should it break (or this process die).
func WithOnCloseRelease() AcquireOption {
	return func(o *acquireOptions) { o.onCloseRelease = true }
}

// newRID is 128 random bits in hex.
func newRID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// No randomness: a rid from the clock still names the request.
		return strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	return hex.EncodeToString(b[:])
}

func acquireRequest(command, name string, o *acquireOptions) *request {
	req := newRequest(command).arg("name", name, MaxName)
	if o.lease != 0 {
		req.optDuration("lease", o.lease)
	}
	if o.onCloseRelease {
		req.opt("onclose", "release")
	}
	if o.owner != "" {
		req.opt("owner", o.owner)
		if req.err == nil {
			req.err = word("owner", o.owner, MaxLabel)
		}
	}
	if o.rid == "" {
		o.rid = newRID()
	}
	req.opt("rid", o.rid)
	if req.err == nil {
		req.err = word("rid", o.rid, MaxLabel)
	}
	if o.limit != 0 {
		if (o.limit < 1 || o.limit > MaxLimit) && req.err == nil {
			req.err = badArg("limit must be an integer from 1 to 65535")
		}
		req.opt("limit", strconv.Itoa(o.limit))
	}
	if o.mode == Shared {
		req.opt("mode", "shared")
	}
	if o.delay != 0 {
		req.optDuration("delay", o.delay)
	}
	return req
}

// Acquire waits in name's FIFO queue until it is granted, the wait runs
// out (ErrTimeout) or ctx ends; a wait that ctx ended is withdrawn, and a
// grant that raced with it is released.
func (c *Client) Acquire(ctx context.Context, name string, opts ...AcquireOption) (*Lease, error) {
	var o acquireOptions
	for _, opt := range opts {
		opt(&o)
	}
	req := acquireRequest("ACQUIRE", name, &o)
	waitFor(req, ctx, o.wait, o.hasWait)
	if o.onCloseRelease {
		// The lease lives as long as its connection: give it one.
		req.waits, req.bind = true, true
	}
	return c.grant(ctx, name, req)
}

// Try takes name if it is free and nobody waits; else a *HeldError
// (errors.Is(err, ErrHeld)).
func (c *Client) Try(ctx context.Context, name string, opts ...AcquireOption) (*Lease, error) {
	var o acquireOptions
	for _, opt := range opts {
		opt(&o)
	}
	req := acquireRequest("TRY", name, &o)
	if o.onCloseRelease {
		req.waits, req.bind = true, true
	}
	return c.grant(ctx, name, req)
}

func (c *Client) grant(ctx context.Context, name string, req *request) (*Lease, error) {
	cl, err := c.do(ctx, req)
	if cl != nil && ctx.Err() != nil && cl.reply.Keyword == "GRANTED" {
		// Granted as the wait was withdrawn: nobody will use it.
		if l, gerr := c.newLease(name, cl); gerr == nil {
			rctx, cancel := context.WithTimeout(context.Background(),
				c.cfg.RequestTimeout)
			_ = l.Release(rctx)
			cancel()
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if cl.reply.Keyword == "HELD" {
		if cl.reply.Name != name {
			return nil, protocolError("HELD for another name")
		}
		d, err := cl.reply.optUint("delay")
		if err != nil {
			return nil, err
		}
		return nil, &HeldError{Name: name, Delay: int64(d)}
	}
	return c.newLease(name, cl)
}

// Lease is one grant of a lock: its fence, its handle, and its deadline
// as this client knows it (counted from when the request that granted or
// last renewed it was sent, so never later than lockd's).
type Lease struct {
	c      *Client
	name   string
	fence  uint64
	handle string

	mu       sync.Mutex
	ttl      time.Duration // the lease last granted or renewed
	deadline time.Time
	guard    *time.Timer
	ended    bool
	err      error // why it ended: ErrLost..., ErrReleased
	lost     chan struct{}
	work     context.Context
	stopWork context.CancelFunc
	keep     *keepAlive
	bound    *conn // onclose=release: the lease's connection
}

func (c *Client) newLease(name string, cl *call) (*Lease, error) {
	fence, handle, ttl, err := cl.reply.grant(name)
	if err != nil {
		return nil, err
	}
	l := &Lease{c: c, name: name, fence: fence, handle: handle,
		lost: make(chan struct{}), bound: cl.conn}
	l.work, l.stopWork = context.WithCancel(context.Background())
	l.mu.Lock()
	l.renewedLocked(cl.sent, ttl)
	l.mu.Unlock()
	if l.bound != nil {
		go func() {
			// Its connection gone, so is the lease.
			c.bind(l.bound)
			l.mu.Lock()
			l.endLocked(&wrapped{kind: ErrLost, why: "its onclose=release " +
				"connection closed", err: l.bound.failed()})
			l.mu.Unlock()
		}()
	}
	return l, nil
}

// Resume makes a *Lease of a handle granted elsewhere (lockctl run's
// LOCKD_HANDLE, a handle kept in a file), to renew or release it.  Its
// deadline is unknown until a Renew.
func (c *Client) Resume(name, handle string) (*Lease, error) {
	if err := word("name", name, MaxName); err != nil {
		return nil, err
	}
	i := 0
	for i < len(handle) && handle[i] != '-' {
		i++
	}
	fence, err := strconv.ParseUint(handle[:i], 10, 63)
	if err != nil || fence == 0 || !validHandle(handle, fence) {
		return nil, badArg("handle must be <fence>-<16 lowercase hex digits>")
	}
	l := &Lease{c: c, name: name, fence: fence, handle: handle,
		lost: make(chan struct{})}
	l.work, l.stopWork = context.WithCancel(context.Background())
	l.mu.Lock()
	l.renewedLocked(time.Now(), 0)
	l.mu.Unlock()
	return l, nil
}

// Name is the lock's name.
func (l *Lease) Name() string { return l.name }

// Fence is the fencing token: send it with every write to the guarded
// resource, which refuses any fence lower than one it has seen.
func (l *Lease) Fence() uint64 { return l.fence }

// Handle is the holder's proof: RENEW and RELEASE need it.
func (l *Lease) Handle() string { return l.handle }

// TTL is the lease last granted or renewed.
func (l *Lease) TTL() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ttl
}

// Deadline: the lease ends no earlier than this, unless renewed.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Lost is closed when the lease is lost: a renewal was refused, or none
// succeeded in time (see stopAt).  A Release does not close it.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Context is for the holder's work: it is cancelled when the lease is
// lost, early enough to stop before the lease could pass to anyone else,
// and when the lease is released.
func (l *Lease) Context() context.Context { return l.work }

// Err is why the lease ended (ErrLost, ErrReleased, a refusal), or nil.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// The keep-alive's and the guard's schedule, lockctl run's exactly
// (client/lockctl_run.c; docs/lockctl.1, "HOW RUN HOLDS THE LOCK"), as shares
// of the lease L granted, counted from the moment the request that last
// granted or renewed it was sent: renew every L/3; after a failure retry
// after 50 ms, the pause doubling to at most 250 ms (and L/15, at least
// 10 ms: client/schedule.h, which every lockd client keeps), on a new
// connection at once when the old one broke or a reply is L/6 late; three
// NOTLEADERs in a row are followed at once, further ones after the pause.  The holder is told to stop
// (lockctl's SIGTERM: Context cancelled, Lost closed) by L - L/6 - L/10,
// which leaves a grace of L/6 for the work to wind down (lockctl's SIGTERM
// to SIGKILL) and a margin of L/10 before the lease could end.  A lease
// survives a fail-over that takes less than about 40% of it (L - L/3 -
// L/6 - L/10 at worst): 10 s or more is safe with lockd's 3 s leader lease
// while etcd keeps its own leader (docs/client.md).
const (
	renewDivisor  = 3
	retryFirst    = 50 * time.Millisecond
	retryMax      = 250 * time.Millisecond
	retryDivisor  = 15
	retryMin      = 10 * time.Millisecond
	followAtOnce  = 3
	stallDivisor  = 6
	graceDivisor  = 6
	marginDivisor = 10
)

// retryAfter is the pause before the next try of a failed renewal of a
// lease of ttl, and the backoff after it (0 after a success).
func retryAfter(ttl, backoff time.Duration) (pause, next time.Duration) {
	limit := ttl / retryDivisor
	if limit > retryMax {
		limit = retryMax
	}
	if limit < retryMin {
		limit = retryMin
	}
	pause = backoff
	if pause <= 0 {
		pause = retryFirst
	}
	if pause > limit {
		pause = limit
	}
	next = 2 * pause
	if next > limit {
		next = limit
	}
	return pause, next
}

// stopAt is when the holder must be told to stop unless a renewal
// succeeds first (lockctl's term_deadline).
func stopAt(deadline time.Time, ttl time.Duration) time.Time {
	return deadline.Add(-ttl/graceDivisor - ttl/marginDivisor)
}

// renewedLocked records a grant or renewal sent at sent for ttl and sets
// the guard to its stop time.
func (l *Lease) renewedLocked(sent time.Time, ttl time.Duration) {
	if l.ended {
		return
	}
	l.ttl = ttl
	l.deadline = sent.Add(ttl)
	if ttl == 0 {
		return // Resume: nothing known to guard yet
	}
	wait := time.Until(stopAt(l.deadline, ttl))
	if l.guard == nil {
		l.guard = time.AfterFunc(wait, l.onGuard)
	} else {
		l.guard.Reset(wait)
	}
}

// onGuard: the stop time came (or a renewal moved it meanwhile).
func (l *Lease) onGuard() {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return
	}
	if left := time.Until(stopAt(l.deadline, l.ttl)); left > 0 {
		l.guard.Reset(left)
		l.mu.Unlock()
		return
	}
	var last error
	if l.keep != nil {
		last = l.keep.lastError()
	}
	l.endLocked(&wrapped{kind: ErrLost, why: "no renewal succeeded in time",
		err: last})
	l.mu.Unlock()
}

// endLocked ends the lease once: why is ErrReleased or a loss.
func (l *Lease) endLocked(why error) {
	if l.ended {
		return
	}
	l.ended = true
	l.err = why
	if l.guard != nil {
		l.guard.Stop()
	}
	if why != ErrReleased {
		close(l.lost)
	}
	l.stopWork()
	if l.keep != nil {
		l.keep.stop()
	}
}

// Renew extends the lease to d from now (0: the server's default).
// A CONFLICT (the lease is not this holder's any more) ends the lease.
func (l *Lease) Renew(ctx context.Context, d time.Duration) error {
	req := newRequest("RENEW").arg("name", l.name, MaxName).
		arg("handle", l.handle, MaxName)
	if d != 0 {
		req.optDuration("lease", d)
	}
	cl, err := l.c.do(ctx, req)
	return l.renewed(cl, err)
}

// renewed reads a RENEW's answer into the lease.
func (l *Lease) renewed(cl *call, err error) error {
	if err != nil {
		if errorIsRefusal(err) {
			l.mu.Lock()
			l.endLocked(&wrapped{kind: ErrLost, why: "renewal refused",
				err: err})
			l.mu.Unlock()
		}
		return err
	}
	r := &cl.reply
	if err := r.expect("RENEWED", l.name); err != nil {
		return err
	}
	fence, err := r.uint("fence")
	if err != nil {
		return err
	}
	if fence != l.fence {
		return protocolError("RENEWED with another fence")
	}
	ttl, err := r.millis("lease")
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return l.err
	}
	l.renewedLocked(cl.sent, ttl)
	return nil
}

// errorIsRefusal: lockd answered, and the answer says the lease is not
// ours (CONFLICT, DENIED, ...); not a failure that a retry may mend.
func errorIsRefusal(err error) bool {
	e, ok := err.(*Error)
	if !ok {
		return false
	}
	switch e.Code {
	case "UNAVAILABLE", "LIMIT", "SHUTDOWN", "NOTLEADER":
		return false
	}
	return true
}

// Release gives the lease back (RELEASED or NOTHELD: both success), stops
// its keep-alive and cancels its Context.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	keep := l.keep
	l.mu.Unlock()
	if keep != nil {
		// No renewal may cross the RELEASE.
		keep.stop()
		<-keep.done
	}
	req := newRequest("RELEASE").arg("name", l.name, MaxName).
		arg("handle", l.handle, MaxName)
	cl, err := l.c.do(ctx, req)
	if err == nil && cl.reply.Name != l.name {
		err = protocolError("RELEASE answered for another name")
	}
	if err == nil && cl.reply.Keyword != "RELEASED" &&
		cl.reply.Keyword != "NOTHELD" {
		err = protocolError("RELEASE answered " + cl.reply.Keyword)
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.endLocked(ErrReleased)
	l.mu.Unlock()
	if l.bound != nil {
		l.bound.close()
	}
	return nil
}
