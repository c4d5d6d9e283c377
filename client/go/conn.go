// conn.go - one connection to one lockd: requests written in the order
// they are sent, by whichever caller finds the writer idle (so requests
// from many goroutines leave in batches), and one reader goroutine that
// hands each reply line to the oldest request still due.  A connection
// that fails once is dead: every request due on it gets the error.

package lockd

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// call is one request in flight and, once done is closed, its answer.
type call struct {
	multi bool          // LIST: LOCK lines until END
	sent  time.Time     // before the request was written
	done  chan struct{} // closed when reply or err is set
	reply Reply
	lines []Reply // LIST's LOCK lines
	err   error
	conn  *conn // an onclose=release grant's connection
}

type conn struct {
	nc       net.Conn
	endpoint int // the index of its endpoint in the client's list

	mu      sync.Mutex
	pending []*call // sent, reply not yet read, oldest first
	out     []byte  // waiting for the writer
	spare   []byte
	writing bool
	err     error // set once: the connection is dead
	dead    chan struct{}
	timeout time.Duration // write deadline
}

func newConn(nc net.Conn, endpoint int, timeout time.Duration) *conn {
	c := &conn{nc: nc, endpoint: endpoint, dead: make(chan struct{}),
		timeout: timeout}
	go c.read()
	return c
}

// send queues line and writes it, unless another caller is writing: then
// that caller writes it with what else has queued meanwhile.
func (c *conn) send(cl *call, line []byte) error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	cl.sent = time.Now()
	cl.done = make(chan struct{})
	c.pending = append(c.pending, cl)
	c.out = append(c.out, line...)
	if c.writing {
		c.mu.Unlock()
		return nil
	}
	c.writing = true
	for len(c.out) > 0 && c.err == nil {
		buf := c.out
		c.out = c.spare[:0]
		c.mu.Unlock()
		if c.timeout > 0 {
			_ = c.nc.SetWriteDeadline(time.Now().Add(c.timeout))
		}
		_, err := c.nc.Write(buf)
		c.mu.Lock()
		c.spare = buf[:0]
		if err != nil {
			c.failLocked(connError("write", err))
		}
	}
	c.writing = false
	c.mu.Unlock()
	return nil
}

// fail kills the connection: every request due gets err.
func (c *conn) fail(err error) {
	c.mu.Lock()
	c.failLocked(err)
	c.mu.Unlock()
}

func (c *conn) failLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	c.nc.Close()
	for _, cl := range c.pending {
		cl.err = err
		close(cl.done)
	}
	c.pending = nil
	close(c.dead)
}

// failed is the error that killed the connection, or nil.
func (c *conn) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// idle: alive and owing no reply.
func (c *conn) idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err == nil && len(c.pending) == 0
}

func (c *conn) close() { c.fail(connError("closed", net.ErrClosed)) }

func (c *conn) read() {
	r := bufio.NewReaderSize(c.nc, 16*1024)
	for {
		line, err := readLine(r)
		if err != nil {
			if errors.Is(err, ErrProtocol) {
				c.fail(err)
			} else {
				c.fail(connError("read", err))
			}
			return
		}
		reply, err := ParseReply(line)
		if err != nil {
			c.fail(err)
			return
		}
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.failLocked(protocolError("a reply to no request: " +
				reply.Keyword))
			c.mu.Unlock()
			return
		}
		cl := c.pending[0]
		if cl.multi && reply.Keyword == "LOCK" {
			cl.lines = append(cl.lines, reply)
			c.mu.Unlock()
			continue
		}
		c.pending[0] = nil
		c.pending = c.pending[1:]
		cl.reply = reply
		close(cl.done)
		c.mu.Unlock()
	}
}

// readLine reads one line of at most MaxReplyLine bytes; a line cut off
// by the end of the stream is an error, not a reply.
func readLine(r *bufio.Reader) ([]byte, error) {
	var long []byte
	for {
		part, err := r.ReadSlice('\n')
		if err == nil {
			if long == nil {
				return part, nil
			}
			return append(long, part...), nil
		}
		if err == bufio.ErrBufferFull {
			if len(long)+len(part) > MaxReplyLine {
				return nil, protocolError("reply line too long")
			}
			long = append(long, part...)
			continue
		}
		if err == io.EOF && len(part)+len(long) > 0 {
			return nil, connError("the server closed the connection "+
				"in the middle of a reply", io.ErrUnexpectedEOF)
		}
		return nil, err
	}
}

// withdraw ends the input of a connection whose request waits (a
// half-close): lockd then answers a waiting ACQUIRE or WATCH at once and
// never grants it later (docs/protocol.md, "The end of a connection").
func (c *conn) withdraw() {
	switch nc := c.nc.(type) {
	case *net.TCPConn:
		_ = nc.CloseWrite()
	case *net.UnixConn:
		_ = nc.CloseWrite()
	case *tls.Conn:
		_ = nc.CloseWrite()
	default:
		c.close()
	}
}
