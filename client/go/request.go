// request.go - request lines: what the client sends, checked so that no
// argument can break the framing (a space or newline in a name would make
// two words or two requests of one).  Pure, like reply.go.

package lockd

import (
	"strconv"
	"strings"
	"time"
)

// The protocol's limits on values (docs/protocol.md, "Values").
const (
	MaxName  = 255 // bytes in a lock name
	MaxLabel = 64  // bytes in an owner= label and a rid=
	MaxLimit = 65535
	MaxList  = 1000
)

// maxDuration: the protocol's longest duration, 365 days.
const maxDuration = 365 * 24 * time.Hour

// word checks that s is 1..max bytes with no whitespace or control byte.
func word(what, s string, max int) error {
	if len(s) == 0 || len(s) > max {
		return badArg(what + " must be 1 to " + strconv.Itoa(max) + " bytes")
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return badArg(what + " may not hold whitespace or control bytes")
		}
	}
	return nil
}

// millis formats d for the wire: whole milliseconds, a positive part of
// one rounded up (so a short lease is never sent as 0, the default).
func millis(what string, d time.Duration) (string, error) {
	if d < 0 || d > maxDuration {
		return "", badArg(what + " must be 0 to 365 days")
	}
	ms := d / time.Millisecond
	if d%time.Millisecond != 0 {
		ms++
	}
	return strconv.FormatInt(int64(ms), 10), nil
}

// request is one request line in the making, and what its reply is.
type request struct {
	b          strings.Builder
	err        error
	multi      bool // LIST: LOCK lines up to END
	repeatable bool // safe to send again after a broken connection
	waits      bool // may wait (ACQUIRE with a wait, WATCH): own connection
	wait       time.Duration
	forever    bool // waits with no wait= bound
	bind       bool // onclose=release: a grant keeps its connection
}

func newRequest(command string) *request {
	r := &request{repeatable: true}
	r.b.WriteString(command)
	return r
}

func (r *request) arg(what, value string, max int) *request {
	if r.err == nil {
		r.err = word(what, value, max)
	}
	r.b.WriteByte(' ')
	r.b.WriteString(value)
	return r
}

func (r *request) uint(value uint64) *request {
	r.b.WriteByte(' ')
	r.b.WriteString(strconv.FormatUint(value, 10))
	return r
}

func (r *request) opt(key, value string) *request {
	r.b.WriteByte(' ')
	r.b.WriteString(key)
	r.b.WriteByte('=')
	r.b.WriteString(value)
	return r
}

func (r *request) optDuration(key string, d time.Duration) *request {
	v, err := millis(key, d)
	if r.err == nil {
		r.err = err
	}
	return r.opt(key, v)
}

func (r *request) line() []byte {
	return []byte(r.b.String() + "\n")
}
