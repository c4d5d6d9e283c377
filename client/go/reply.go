// reply.go - the reply parser: one line of lockd's protocol in, a Reply
// out, or an error saying why the line cannot be one.  Pure: no I/O, no
// clock, and no input panics it (FuzzParseReply).  What each command's
// reply must carry is checked where it is read (info, grant, ...).

package lockd

import (
	"bytes"
	"strconv"
	"time"
)

// Reply is one reply line taken apart.
type Reply struct {
	Keyword string            // GRANTED, STATUS, ERR, ...
	Name    string            // the lock name, for the keywords that carry one
	Fields  map[string]string // key=value words; later fields are allowed
	Text    string            // ERR's code and text, HELP's and AUTHED's words
}

// MaxReplyLine bounds one reply line; a longer one is a protocol error.
const MaxReplyLine = 64 * 1024

// Keywords followed by a lock name.
var namedKeywords = map[string]bool{
	"GRANTED": true, "HELD": true, "RENEWED": true, "RELEASED": true,
	"NOTHELD": true, "STATUS": true, "LOCK": true, "CURRENT": true,
	"STALE": true, "CHANGED": true,
}

// Keywords whose rest is text, not fields.
var textKeywords = map[string]bool{"ERR": true, "HELP": true, "AUTHED": true}

// ParseReply reads one reply line, with or without its CRLF.
func ParseReply(line []byte) (Reply, error) {
	var r Reply

	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) > MaxReplyLine {
		return r, protocolError("reply line too long")
	}
	for _, b := range line {
		if (b < 0x20 && b != '\t') || b == 0x7f {
			return r, protocolError("control byte in a reply")
		}
	}
	words := bytes.Fields(line)
	if len(words) == 0 {
		return r, protocolError("empty reply line")
	}
	r.Keyword = string(words[0])
	for _, b := range words[0] {
		if b < 'A' || b > 'Z' {
			return r, protocolError("reply keyword " +
				strconv.Quote(r.Keyword) + " is not one")
		}
	}
	words = words[1:]
	if textKeywords[r.Keyword] {
		rest := bytes.TrimLeft(line[len(r.Keyword):], " \t")
		r.Text = string(rest)
		if r.Keyword == "ERR" && len(words) == 0 {
			return r, protocolError("ERR without a code")
		}
		return r, nil
	}
	if namedKeywords[r.Keyword] {
		if len(words) == 0 {
			return r, protocolError(r.Keyword + " without a name")
		}
		r.Name = string(words[0])
		words = words[1:]
	}
	for _, w := range words {
		i := bytes.IndexByte(w, '=')
		if i <= 0 {
			return r, protocolError("reply word " +
				strconv.Quote(string(w)) + " is not key=value")
		}
		if r.Fields == nil {
			r.Fields = make(map[string]string, len(words))
		}
		r.Fields[string(w[:i])] = string(w[i+1:])
	}
	return r, nil
}

// err is the *Error an ERR reply stands for, nil for any other.
func (r *Reply) err() *Error {
	if r.Keyword != "ERR" {
		return nil
	}
	code, text := r.Text, ""
	for i := 0; i < len(r.Text); i++ {
		if r.Text[i] == ' ' || r.Text[i] == '\t' {
			code = r.Text[:i]
			text = string(bytes.TrimLeft([]byte(r.Text[i:]), " \t"))
			break
		}
	}
	return &Error{Code: code, Text: text}
}

// uint reads a field that must be there as a decimal below 2^63.
func (r *Reply) uint(key string) (uint64, error) {
	s, ok := r.Fields[key]
	if !ok {
		return 0, protocolError(r.Keyword + " without " + key + "=")
	}
	v, err := strconv.ParseUint(s, 10, 63)
	if err != nil {
		return 0, protocolError(r.Keyword + " " + key + "=" +
			strconv.Quote(s) + " is not a number")
	}
	return v, nil
}

// optUint reads a field that may be absent (then 0).
func (r *Reply) optUint(key string) (uint64, error) {
	if _, ok := r.Fields[key]; !ok {
		return 0, nil
	}
	return r.uint(key)
}

func (r *Reply) millis(key string) (time.Duration, error) {
	v, err := r.uint(key)
	if v > uint64(maxMillis) {
		return 0, protocolError(r.Keyword + " " + key + "= is out of range")
	}
	return time.Duration(v) * time.Millisecond, err
}

func (r *Reply) optMillis(key string) (time.Duration, error) {
	if _, ok := r.Fields[key]; !ok {
		return 0, nil
	}
	return r.millis(key)
}

// maxMillis: the most milliseconds a time.Duration holds.
const maxMillis = int64(1<<63-1) / int64(time.Millisecond)

// expect checks the keyword, and the name when one was asked about.
func (r *Reply) expect(keyword, name string) error {
	if r.Keyword != keyword {
		return protocolError("expected " + keyword + ", got " + r.Keyword)
	}
	if name != "" && r.Name != name {
		return protocolError(keyword + " for " + strconv.Quote(r.Name) +
			", asked about " + strconv.Quote(name))
	}
	return nil
}

// LockInfo is what STATUS, LIST and WATCH say of a lock.
type LockInfo struct {
	Name    string
	Held    bool
	Fence   uint64        // the newest holder's, 0 when free
	TTL     time.Duration // the newest holder's lease left
	Queue   int           // waiters
	Owner   string        // the newest holder's owner= label, "" if none
	Holders int           // holders; 0 when the reply left it out
	Limit   int           // a semaphore's limit; 0 when the reply left it out
	Shared  bool          // held shared
	Delay   time.Duration // lock-delay left
	Cause   string        // WATCH only: granted, released, expired, ...
}

// info reads the fields STATUS, LOCK and CHANGED share.
func (r *Reply) info() (LockInfo, error) {
	var (
		in  = LockInfo{Name: r.Name, Owner: r.Fields["owner"]}
		err error
		v   uint64
	)
	if v, err = r.uint("held"); err != nil {
		return in, err
	}
	if v > 1 {
		return in, protocolError("held= is neither 0 nor 1")
	}
	in.Held = v == 1
	if in.Fence, err = r.uint("fence"); err != nil {
		return in, err
	}
	if in.TTL, err = r.millis("ttl"); err != nil {
		return in, err
	}
	for _, f := range []struct {
		key string
		to  *int
	}{{"queue", &in.Queue}, {"holders", &in.Holders}, {"limit", &in.Limit}} {
		if v, err = r.optUint(f.key); err != nil {
			return in, err
		}
		if v > 1<<31-1 {
			return in, protocolError(f.key + "= is out of range")
		}
		*f.to = int(v)
	}
	if _, ok := r.Fields["queue"]; !ok {
		return in, protocolError(r.Keyword + " without queue=")
	}
	in.Shared = r.Fields["mode"] == "shared"
	if in.Delay, err = r.optMillis("delay"); err != nil {
		return in, err
	}
	in.Cause = r.Fields["cause"]
	return in, nil
}

// grant reads GRANTED's fence, handle and lease.
func (r *Reply) grant(name string) (fence uint64, handle string,
	lease time.Duration, err error) {
	if err = r.expect("GRANTED", name); err != nil {
		return
	}
	if fence, err = r.uint("fence"); err != nil {
		return
	}
	if fence == 0 {
		return 0, "", 0, protocolError("GRANTED with fence=0")
	}
	handle = r.Fields["handle"]
	if !validHandle(handle, fence) {
		return 0, "", 0, protocolError("GRANTED with a bad handle " +
			strconv.Quote(handle))
	}
	lease, err = r.millis("lease")
	return
}

// validHandle: "<fence>-<16 lowercase hex>", the fence the grant's.
func validHandle(h string, fence uint64) bool {
	prefix := strconv.FormatUint(fence, 10) + "-"
	if len(h) != len(prefix)+16 || h[:len(prefix)] != prefix {
		return false
	}
	for _, c := range h[len(prefix):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
