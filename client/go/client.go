// Package lockd is a client for lockd, the network lock daemon: named
// FIFO-fair locks with leases and fencing tokens, over lockd's line
// protocol (docs/protocol.md).  Standard library only.
//
// A *Client is safe for use by many goroutines: their requests are
// pipelined on one connection and answered in order.  A request that may
// wait (Acquire with a wait, Watch) goes on a connection of its own, so
// that it holds back nobody's replies and can be withdrawn when its
// context ends.
package lockd

import (
	"context"
	"crypto/tls"
	"errors"
	"strconv"
	"sync"
	"time"
)

// Config says where lockd is and how to talk to it.
type Config struct {
	// Endpoints: one lockd, or a cluster's nodes.  Each is "host:port",
	// "host" (port 7420), "[v6]:port", "lockd://host[:port]",
	// "lockds://host[:port]" (TLS) or "lockd:///path" (a Unix socket).
	// A NOTLEADER hint is followed only to an endpoint in this list,
	// written the same way.
	Endpoints []string
	// UnixSocket, when set, is one more endpoint: lockd's --unix path.
	UnixSocket string
	// TLS, when set, is used for every TCP endpoint.  Its ServerName
	// defaults to each endpoint's host.
	TLS *tls.Config
	// Token, when set, is sent as AUTH on every new connection.
	Token string
	// DialTimeout bounds connecting, TLS and AUTH (default 10 s).
	DialTimeout time.Duration
	// RequestTimeout bounds how late a reply may be, beyond the wait a
	// request asked for (default 10 s).  A connection whose reply is
	// later is closed and its requests fail with ErrConnection.
	RequestTimeout time.Duration
	// FailoverTimeout bounds the search for a node that serves a request
	// (default 10 s), as lockctl's -t.
	FailoverTimeout time.Duration
}

const defaultTimeout = 10 * time.Second

// How many connections of waiting requests are kept for reuse.
const maxIdleWaitConns = 4

// Client is a connection to lockd (or to a cluster of lockd nodes).
type Client struct {
	cfg       Config
	endpoints []endpoint
	main      link
	closing   chan struct{}

	mu     sync.Mutex     // guards idle, bound and closed
	idle   []*conn        // connections of waiting requests, free again
	bound  map[*conn]bool // onclose=release leases' connections
	closed bool
}

// Dial connects to lockd at the given endpoints.
func Dial(ctx context.Context, endpoints ...string) (*Client, error) {
	return DialConfig(ctx, Config{Endpoints: endpoints})
}

// DialConfig connects as cfg says.  It returns once a node answered PING.
func DialConfig(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = defaultTimeout
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = defaultTimeout
	}
	if cfg.FailoverTimeout <= 0 {
		cfg.FailoverTimeout = defaultTimeout
	}
	c := &Client{cfg: cfg, closing: make(chan struct{})}
	for _, s := range cfg.Endpoints {
		e, err := parseEndpoint(s, cfg.TLS)
		if err != nil {
			return nil, err
		}
		c.endpoints = append(c.endpoints, e)
	}
	if cfg.UnixSocket != "" {
		c.endpoints = append(c.endpoints, endpoint{network: "unix",
			address: cfg.UnixSocket, key: cfg.UnixSocket})
	}
	if len(c.endpoints) == 0 {
		return nil, errors.New("lockd: no endpoint given")
	}
	c.main.c = c
	if err := c.Ping(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the client's connections, those of onclose=release
// leases too (which ends them).  Other leases stay held until they are
// released or expire; a running KeepAlive stops renewing, so its lease
// is reported lost in time.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	idle := c.idle
	c.idle = nil
	for cn := range c.bound {
		idle = append(idle, cn)
	}
	c.bound = nil
	close(c.closing)
	c.mu.Unlock()
	for _, cn := range idle {
		cn.close()
	}
	c.main.close()
	return nil
}

// newLink is a link of its own, starting where the client's is.
func (c *Client) newLink() *link {
	c.main.mu.Lock()
	defer c.main.mu.Unlock()
	return &link{c: c, at: c.main.at}
}

// waitConn is a connection for one waiting request, to where l goes.
func (c *Client) waitConn(ctx context.Context, l *link) (*conn, error) {
	l.mu.Lock()
	at := l.at
	l.mu.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	for len(c.idle) > 0 {
		cn := c.idle[len(c.idle)-1]
		c.idle = c.idle[:len(c.idle)-1]
		if cn.endpoint == at && cn.idle() {
			c.mu.Unlock()
			return cn, nil
		}
		cn.close()
	}
	c.mu.Unlock()
	return l.connect(ctx)
}

// bind keeps cn for an onclose=release lease until it closes.
func (c *Client) bind(cn *conn) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cn.close()
		return
	}
	if c.bound == nil {
		c.bound = make(map[*conn]bool)
	}
	c.bound[cn] = true
	c.mu.Unlock()
	<-cn.dead
	c.mu.Lock()
	delete(c.bound, cn)
	c.mu.Unlock()
}

func (c *Client) putWaitConn(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.idle) >= maxIdleWaitConns || !cn.idle() {
		cn.close()
		return
	}
	c.idle = append(c.idle, cn)
}

func (c *Client) do(ctx context.Context, req *request) (*call, error) {
	select {
	case <-c.closing:
		return nil, ErrClosed
	default:
	}
	return c.main.do(ctx, req)
}

// Ping sends PING; nil when PONG came back.
func (c *Client) Ping(ctx context.Context) error {
	cl, err := c.do(ctx, newRequest("PING"))
	if err != nil {
		return err
	}
	return cl.reply.expect("PONG", "")
}

// Help is HELP's line: the commands the server knows.
func (c *Client) Help(ctx context.Context) (string, error) {
	cl, err := c.do(ctx, newRequest("HELP"))
	if err != nil {
		return "", err
	}
	return cl.reply.Text, cl.reply.expect("HELP", "")
}

// Stats is STATS's counters, by name ("connections", "held", "role", ...).
type Stats map[string]string

// Int is a counter's value, 0 when absent or not a number.
func (s Stats) Int(key string) int64 {
	v, _ := strconv.ParseInt(s[key], 10, 64)
	return v
}

// Stats sends STATS.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	cl, err := c.do(ctx, newRequest("STATS"))
	if err != nil {
		return nil, err
	}
	if err := cl.reply.expect("STATS", ""); err != nil {
		return nil, err
	}
	return Stats(cl.reply.Fields), nil
}

// Status is STATUS: diagnostics, never a basis for acquiring.
func (c *Client) Status(ctx context.Context, name string) (LockInfo, error) {
	cl, err := c.do(ctx, newRequest("STATUS").arg("name", name, MaxName))
	if err != nil {
		return LockInfo{}, err
	}
	if err := cl.reply.expect("STATUS", name); err != nil {
		return LockInfo{}, err
	}
	return cl.reply.info()
}

// ListOptions narrow LIST.
type ListOptions struct {
	Prefix string // names that start with it
	After  string // names after it (the previous page's next)
	Limit  int    // 1 to 1000; 0: the server's default (100)
}

// List is one page of LIST, and the After of the next page ("" when this
// page is the last).
func (c *Client) List(ctx context.Context, o ListOptions) ([]LockInfo, string, error) {
	req := newRequest("LIST")
	req.multi = true
	if o.Prefix != "" {
		req.opt("prefix", o.Prefix)
		if req.err == nil {
			req.err = word("prefix", o.Prefix, MaxName)
		}
	}
	if o.After != "" {
		req.opt("after", o.After)
		if req.err == nil {
			req.err = word("after", o.After, MaxName)
		}
	}
	if o.Limit != 0 {
		if (o.Limit < 1 || o.Limit > MaxList) && req.err == nil {
			req.err = badArg("limit must be an integer from 1 to 1000")
		}
		req.opt("limit", strconv.Itoa(o.Limit))
	}
	cl, err := c.do(ctx, req)
	if err != nil {
		return nil, "", err
	}
	if err := cl.reply.expect("END", ""); err != nil {
		return nil, "", err
	}
	count, err := cl.reply.uint("count")
	if err != nil {
		return nil, "", err
	}
	if count != uint64(len(cl.lines)) {
		return nil, "", protocolError("END count= differs from the LOCK lines")
	}
	locks := make([]LockInfo, 0, len(cl.lines))
	for i := range cl.lines {
		in, err := cl.lines[i].info()
		if err != nil {
			return nil, "", err
		}
		locks = append(locks, in)
	}
	return locks, cl.reply.Fields["next"], nil
}

// CheckResult is CHECK's answer.
type CheckResult struct {
	Current bool          // CURRENT: a live holder has the fence
	Fence   uint64        // the fence asked about, or the newest holder's
	TTL     time.Duration // CURRENT: that holder's lease left
}

// Check asks whether fence is a live holder's (a sequencer check).
func (c *Client) Check(ctx context.Context, name string, fence uint64) (CheckResult, error) {
	req := newRequest("CHECK").arg("name", name, MaxName).uint(fence)
	cl, err := c.do(ctx, req)
	if err != nil {
		return CheckResult{}, err
	}
	r := &cl.reply
	var res CheckResult
	switch r.Keyword {
	case "CURRENT":
		res.Current = true
		if res.TTL, err = r.millis("ttl"); err != nil {
			return res, err
		}
	case "STALE":
	default:
		return res, protocolError("CHECK answered " + r.Keyword)
	}
	if r.Name != name {
		return res, protocolError("CHECK answered for another name")
	}
	res.Fence, err = r.uint("fence")
	return res, err
}

// Force frees name's holder if its fence is exactly fence: true when it
// did (RELEASED), false when no live holder had that fence (NOTHELD).
func (c *Client) Force(ctx context.Context, name string, fence uint64) (bool, error) {
	req := newRequest("FORCE").arg("name", name, MaxName).uint(fence)
	// Repeating a FORCE that was done would say NOTHELD: not repeated.
	req.repeatable = false
	cl, err := c.do(ctx, req)
	if err != nil {
		return false, err
	}
	if cl.reply.Name != name {
		return false, protocolError("FORCE answered for another name")
	}
	switch cl.reply.Keyword {
	case "RELEASED":
		return true, nil
	case "NOTHELD":
		return false, nil
	}
	return false, protocolError("FORCE answered " + cl.reply.Keyword)
}

// WatchOption shapes a Watch.
type WatchOption func(*watchOptions)

type watchOptions struct {
	fence    uint64
	hasFence bool
	wait     time.Duration
	hasWait  bool
}

// WatchFence answers as soon as the newest holder's fence is not f
// (0: nobody holds it).  Without it, Watch waits for the next change.
func WatchFence(f uint64) WatchOption {
	return func(o *watchOptions) { o.fence, o.hasFence = f, true }
}

// WatchWait bounds the wait (then ErrTimeout); 0 answers at once.
func WatchWait(d time.Duration) WatchOption {
	return func(o *watchOptions) { o.wait, o.hasWait = d, true }
}

// Watch is WATCH, a long poll answered once, on a connection of its own.
// Without WatchWait it waits until ctx ends (then ctx.Err()).
func (c *Client) Watch(ctx context.Context, name string, opts ...WatchOption) (LockInfo, error) {
	var o watchOptions
	for _, opt := range opts {
		opt(&o)
	}
	req := newRequest("WATCH").arg("name", name, MaxName)
	if o.hasFence {
		req.opt("fence", strconv.FormatUint(o.fence, 10))
	}
	waitFor(req, ctx, o.wait, o.hasWait)
	cl, err := c.do(ctx, req)
	if err != nil {
		return LockInfo{}, err
	}
	if err := cl.reply.expect("CHANGED", name); err != nil {
		return LockInfo{}, err
	}
	return cl.reply.info()
}

// waitFor sets a waiting request's wait=: the one asked for, else what
// is left of ctx's deadline (so lockd ends the wait itself), else none.
func waitFor(req *request, ctx context.Context, wait time.Duration, has bool) {
	if !has {
		if d, ok := ctx.Deadline(); ok {
			wait, has = time.Until(d), true
			if wait < 0 {
				wait = 0
			}
			wait = wait.Truncate(time.Millisecond)
		}
	}
	req.waits = !has || wait > 0
	req.forever = !has
	if has {
		req.wait = wait
		req.optDuration("wait", wait)
	}
}
