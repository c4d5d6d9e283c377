// link.go - where requests go: the configured endpoints, the dialing
// (TCP, a Unix socket, TLS, AUTH), and the fail-over rules liblockd's
// lockd__call follows: a NOTLEADER hint is followed only to an endpoint in
// the list (and never to the node that gave it), else the next endpoint
// is tried; a request is sent again after a broken connection only when
// repeating it is safe; the search ends after FailoverTimeout or
// failoverHops attempts.

package lockd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultPort is lockd's port when an endpoint names none.
const DefaultPort = 7420

// As liblockd (client/lockd.c): each endpoint once at once, then a pause
// from 50 ms doubling up to 250 ms; at most 64 attempts
// (LOCKD_FAILOVER_HOPS_MAX).
const (
	failoverBackoff    = 50 * time.Millisecond
	failoverBackoffMax = 250 * time.Millisecond
	failoverHops       = 64
	// How long a withdrawn wait may take to be answered.
	withdrawGrace = 2 * time.Second
)

type endpoint struct {
	network string // tcp or unix
	address string // host:port, or the socket's path
	key     string // as a NOTLEADER hint would name it
	tls     *tls.Config
}

// parseEndpoint reads "host:port", "host", "[v6]:port", "lockd://host[:port]",
// "lockds://host[:port]" (TLS) and "lockd:///path" (a Unix socket).
func parseEndpoint(s string, tlsConfig *tls.Config) (endpoint, error) {
	e := endpoint{network: "tcp", tls: tlsConfig}
	hostport := s
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return e, fmt.Errorf("lockd: bad endpoint %q: %w", s, err)
		}
		switch u.Scheme {
		case "lockd":
		case "lockds":
			if e.tls == nil {
				e.tls = &tls.Config{}
			}
		default:
			return e, fmt.Errorf("lockd: bad endpoint %q: the scheme "+
				"must be lockd or lockds", s)
		}
		if u.Host == "" {
			if u.Scheme != "lockd" || u.Path == "" {
				return e, fmt.Errorf("lockd: bad endpoint %q", s)
			}
			return endpoint{network: "unix", address: u.Path,
				key: u.Path}, nil
		}
		hostport = u.Host
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.Trim(hostport, "[]"), strconv.Itoa(DefaultPort)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 ||
		host == "" {
		return e, fmt.Errorf("lockd: bad endpoint %q", s)
	}
	e.address = net.JoinHostPort(host, port)
	e.key = e.address
	if e.tls != nil && e.tls.ServerName == "" {
		e.tls = e.tls.Clone()
		e.tls.ServerName = host
	}
	return e, nil
}

// link is one line of requests: its connection, and the endpoint the next
// connection goes to.  The Client has one for its calls; a keep-alive has
// its own.
type link struct {
	c  *Client
	mu sync.Mutex
	cn *conn
	at int
}

// dial opens a connection to endpoint at and authenticates it.
func (l *link) dial(ctx context.Context, at int) (*conn, error) {
	cfg := &l.c.cfg
	e := l.c.endpoints[at]
	ctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, e.network, e.address)
	if err != nil {
		return nil, &dialError{connError("connect to "+e.key, err)}
	}
	if e.tls != nil {
		tc := tls.Client(nc, e.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, &dialError{connError("TLS with "+e.key, err)}
		}
		nc = tc
	}
	cn := newConn(nc, at, cfg.RequestTimeout)
	if cfg.Token != "" {
		req := newRequest("AUTH").arg("token", cfg.Token, MaxName)
		if req.err != nil {
			cn.close()
			return nil, req.err
		}
		cl, err := l.roundTrip(ctx, cn, req)
		if err == nil && cl.reply.Keyword != "AUTHED" {
			err = protocolError("AUTH answered " + cl.reply.Keyword)
		}
		if err != nil {
			cn.close()
			if errors.Is(err, ErrConnection) {
				err = &dialError{err}
			}
			return nil, err
		}
	}
	return cn, nil
}

// dialError: nothing was sent, so any request may be tried again.
type dialError struct{ error }

func (e *dialError) Unwrap() error { return e.error }

// connect dials the endpoints from l.at on, each once, and returns the
// first that answers.
func (l *link) connect(ctx context.Context) (*conn, error) {
	l.mu.Lock()
	start := l.at
	l.mu.Unlock()
	var last error
	n := len(l.c.endpoints)
	for i := 0; i < n; i++ {
		at := (start + i) % n
		cn, err := l.dial(ctx, at)
		if err == nil {
			l.mu.Lock()
			l.at = at
			l.mu.Unlock()
			return cn, nil
		}
		last = err
		var de *dialError
		if !errors.As(err, &de) || ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

// shared is the link's connection, dialed when there is none.
func (l *link) shared(ctx context.Context) (*conn, error) {
	l.mu.Lock()
	cn := l.cn
	l.mu.Unlock()
	if cn != nil && cn.failed() == nil {
		return cn, nil
	}
	cn, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cn != nil && l.cn.failed() == nil {
		// Another caller connected first: use its connection.
		cn.close()
		return l.cn, nil
	}
	l.cn = cn
	return cn, nil
}

// follow moves the link on after cn met a NOTLEADER or broke: to the
// leader a hint named when it is in the list and is not the node that
// named it, else to the endpoint after cn's.
func (l *link) follow(cn *conn, hint string) {
	cn.close()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cn == cn {
		l.cn = nil
	}
	if l.at != cn.endpoint {
		return // another caller moved it already
	}
	for i, e := range l.c.endpoints {
		if hint != "" && e.key == hint && i != cn.endpoint {
			l.at = i
			return
		}
	}
	l.at = (cn.endpoint + 1) % len(l.c.endpoints)
}

// roundTrip sends req on cn and waits for its reply: by the request's own
// wait plus RequestTimeout (then cn is dead: a server that owes a reply
// that long is not answering), or until ctx is done.  A waiting request
// (on a connection of its own) is then withdrawn by a half-close.
func (l *link) roundTrip(ctx context.Context, cn *conn, req *request) (*call, error) {
	cl := &call{multi: req.multi}
	if err := cn.send(cl, req.line()); err != nil {
		return nil, err
	}
	var late <-chan time.Time
	if !req.forever {
		t := time.NewTimer(req.wait + l.c.cfg.RequestTimeout)
		defer t.Stop()
		late = t.C
	}
	select {
	case <-cl.done:
	case <-late:
		cn.fail(connError("no reply within "+
			(req.wait+l.c.cfg.RequestTimeout).String(), ErrTimeout))
		<-cl.done
	case <-ctx.Done():
		if !req.waits {
			return nil, ctx.Err()
		}
		cn.withdraw()
		t := time.NewTimer(withdrawGrace)
		select {
		case <-cl.done:
		case <-t.C:
		}
		t.Stop()
		cn.close()
		<-cl.done
		return cl, ctx.Err()
	}
	if cl.err != nil {
		return nil, cl.err
	}
	if e := cl.reply.err(); e != nil {
		return cl, e
	}
	return cl, nil
}

// attempt sends req once: on the link's connection, or on a connection of
// its own when req waits.
func (l *link) attempt(ctx context.Context, req *request) (*call, error) {
	var (
		cn  *conn
		err error
	)
	if req.waits {
		cn, err = l.c.waitConn(ctx, l)
	} else {
		cn, err = l.shared(ctx)
	}
	if err != nil {
		return nil, err
	}
	cl, err := l.roundTrip(ctx, cn, req)
	var e *Error
	switch {
	case errors.As(err, &e) && e.Code == "NOTLEADER":
		l.follow(cn, e.Leader())
	case errors.Is(err, ErrConnection) || errors.Is(err, ErrProtocol):
		l.follow(cn, "")
	case req.bind && err == nil && cl.reply.Keyword == "GRANTED":
		cl.conn = cn // the lease's own: it ends with it
	case req.waits:
		l.c.putWaitConn(cn)
	}
	return cl, err
}

// do sends req and follows the cluster until a node serves it.
func (l *link) do(ctx context.Context, req *request) (*call, error) {
	if req.err != nil {
		return nil, req.err
	}
	start := time.Now()
	backoff := failoverBackoff
	for attempt := 1; ; attempt++ {
		began := time.Now()
		cl, err := l.attempt(ctx, req)
		if err == nil || ctx.Err() != nil || !l.retryable(req, err) {
			return cl, err
		}
		// A long attempt was a healthy wait, not a search: the
		// fail-over time counts from its end.
		if !errors.Is(err, ErrTimeout) &&
			time.Since(began) > l.c.cfg.FailoverTimeout {
			start, attempt, backoff = time.Now(), 1, failoverBackoff
		}
		if attempt >= failoverHops ||
			time.Since(start) >= l.c.cfg.FailoverTimeout {
			return nil, fmt.Errorf("lockd: no leader answered in %d "+
				"attempts over %v: %w", attempt,
				time.Since(start).Round(time.Millisecond), err)
		}
		if attempt >= len(l.c.endpoints) {
			if !sleep(ctx, backoff) {
				return nil, ctx.Err()
			}
			if backoff *= 2; backoff > failoverBackoffMax {
				backoff = failoverBackoffMax
			}
		}
	}
}

// retryable: another node may serve it (NOTLEADER), nothing was sent (a
// failed dial), or sending it again is safe.
func (l *link) retryable(req *request, err error) bool {
	var de *dialError
	switch {
	case errors.Is(err, ErrNotLeader) || errors.As(err, &de):
		return true
	case errors.Is(err, ErrConnection) || errors.Is(err, ErrShutdown):
		return req.repeatable
	}
	return false
}

func (l *link) close() {
	l.mu.Lock()
	cn := l.cn
	l.cn = nil
	l.mu.Unlock()
	if cn != nil {
		cn.close()
	}
}

// sleep waits d, false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
