// errors.go - the errors a call returns: one *Error per ERR code of the
// protocol (compare with errors.Is against ErrTimeout, ErrConflict, ...),
// and the client's own for what never reached a server's answer.
// Nothing here does I/O.

package lockd

import (
	"errors"
	"strings"
)

// Error is a server's refusal, the reply "ERR <Code> <Text>".
// errors.Is(err, ErrTimeout) and the like compare the code alone.
type Error struct {
	Code string // BADREQ, BADARG, TIMEOUT, NOTLEADER, ...
	Text string // the server's sentence for humans
}

func (e *Error) Error() string {
	if e.Text == "" {
		return "lockd: ERR " + e.Code
	}
	return "lockd: ERR " + e.Code + " " + e.Text
}

// Is makes errors.Is(err, ErrX) true for every *Error with X's code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Leader is the "host:port" a NOTLEADER reply named, or "".
func (e *Error) Leader() string {
	if e.Code != "NOTLEADER" || !strings.HasPrefix(e.Text, "leader=") {
		return ""
	}
	hint := strings.TrimPrefix(e.Text, "leader=")
	if i := strings.IndexAny(hint, " \t"); i >= 0 {
		hint = hint[:i]
	}
	return hint
}

// The protocol's error codes (docs/protocol.md, "Errors").
var (
	ErrBadReq      = &Error{Code: "BADREQ"}
	ErrBadArg      = &Error{Code: "BADARG"}
	ErrTooLong     = &Error{Code: "TOOLONG"}
	ErrTimeout     = &Error{Code: "TIMEOUT"}
	ErrConflict    = &Error{Code: "CONFLICT"}
	ErrLimit       = &Error{Code: "LIMIT"}
	ErrUnavailable = &Error{Code: "UNAVAILABLE"}
	ErrOverflow    = &Error{Code: "OVERFLOW"}
	ErrShutdown    = &Error{Code: "SHUTDOWN"}
	ErrNotLeader   = &Error{Code: "NOTLEADER"}
	ErrDenied      = &Error{Code: "DENIED"}
)

// The client's own errors.
var (
	// ErrHeld: TRY found the lock held (the reply HELD); see *HeldError.
	ErrHeld = errors.New("lockd: the lock is held")
	// ErrProtocol: the server sent a line this client cannot read.
	// The connection it came on is closed.
	ErrProtocol = errors.New("lockd: protocol error")
	// ErrConnection: the connection broke, or no reply came in time.
	ErrConnection = errors.New("lockd: connection failed")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("lockd: client closed")
	// ErrLost: the lease is lost, or could end before a renewal.
	ErrLost = errors.New("lockd: lease lost")
	// ErrReleased: the lease was released by its holder.
	ErrReleased = errors.New("lockd: lease released")
	// ErrNoLeader: an election's lock has no holder.
	ErrNoLeader = errors.New("lockd: election has no leader")
)

// HeldError is TRY's answer HELD; errors.Is(err, ErrHeld) holds.
type HeldError struct {
	Name  string
	Delay int64 // milliseconds of lock-delay left, 0 when none
}

func (e *HeldError) Error() string { return "lockd: " + e.Name + " is held" }

// Is matches ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// wrapped is an error of the client's own kind with a reason.
type wrapped struct {
	kind error
	why  string
	err  error // the cause, when there is one
}

func (w *wrapped) Error() string {
	s := w.kind.Error() + ": " + w.why
	if w.err != nil {
		s += ": " + w.err.Error()
	}
	return s
}

func (w *wrapped) Unwrap() error { return w.err }

func (w *wrapped) Is(target error) bool { return target == w.kind }

func protocolError(why string) error { return &wrapped{kind: ErrProtocol, why: why} }

func connError(why string, err error) error {
	return &wrapped{kind: ErrConnection, why: why, err: err}
}

func badArg(why string) error {
	return &Error{Code: "BADARG", Text: why + " (refused by the client)"}
}
