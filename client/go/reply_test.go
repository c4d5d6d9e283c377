// reply_test.go - the reply parser on good and bad lines, a fuzz target
// (its seeds run with every go test), and a fake server that answers
// with garbage: an error every time, never a panic or a hang.

package lockd

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func TestParseReplyReadsEveryKindOfReply(t *testing.T) {
	r, err := ParseReply([]byte("GRANTED a=b fence=41 handle=41-8c1f0e9b2a7d4c35 lease=30000 new=1\r\n"))
	if err != nil || r.Name != "a=b" {
		t.Fatal(r, err)
	}
	fence, handle, lease, err := r.grant("a=b")
	if err != nil || fence != 41 || handle != "41-8c1f0e9b2a7d4c35" || lease != 30*time.Second {
		t.Fatal(fence, handle, lease, err)
	}
	r, _ = ParseReply([]byte("ERR NOTLEADER leader=10.0.0.12:7420 this node does not serve locks"))
	e := r.err()
	if e.Code != "NOTLEADER" || e.Leader() != "10.0.0.12:7420" || !errors.Is(e, ErrNotLeader) {
		t.Fatalf("%#v", e)
	}
	r, _ = ParseReply([]byte("STATUS x held=1 fence=2 ttl=5 queue=3 owner=o holders=2 limit=4 mode=shared delay=7"))
	in, err := r.info()
	if err != nil || in != (LockInfo{Name: "x", Held: true, Fence: 2,
		TTL: 5 * time.Millisecond, Queue: 3, Owner: "o", Holders: 2, Limit: 4,
		Shared: true, Delay: 7 * time.Millisecond}) {
		t.Fatalf("%+v %v", in, err)
	}
}

func TestParseReplyRefusesBadLines(t *testing.T) {
	for _, line := range []string{
		"", "\r\n", "granted x", "GRANTED", "GRANTED x fence", "ERR",
		"PONG \x00", "STATUS x held=1", "X\x7f",
		strings.Repeat("A", MaxReplyLine+1),
	} {
		r, err := ParseReply([]byte(line))
		if err == nil {
			_, err = r.info()
		}
		if err == nil && r.Keyword != "PONG" {
			t.Errorf("%q parsed: %+v", line, r)
		}
	}
	for _, line := range []string{
		"GRANTED x fence=0 handle=0-8c1f0e9b2a7d4c35 lease=1",
		"GRANTED x fence=1 handle=2-8c1f0e9b2a7d4c35 lease=1",
		"GRANTED x fence=1 handle=1-8C1F0E9B2A7D4C35 lease=1",
		"GRANTED x fence=1 handle=1-8c1f lease=1",
		"GRANTED x fence=9223372036854775808 handle=1-8c1f0e9b2a7d4c35 lease=1",
		"GRANTED x fence=1 handle=1-8c1f0e9b2a7d4c35 lease=-1",
		"GRANTED y fence=1 handle=1-8c1f0e9b2a7d4c35 lease=1",
		"GRANTED x fence=1 handle=1-8c1f0e9b2a7d4c35",
		"GRANTED x fence=1 handle=1-8c1f0e9b2a7d4c35 lease=99999999999999999",
	} {
		r, err := ParseReply([]byte(line))
		if err == nil {
			_, _, _, err = r.grant("x")
		}
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%q: %v", line, err)
		}
	}
}

// FuzzParseReply: any line is a Reply or an error, and reading it as each
// command's reply is a value or an error; nothing panics.
func FuzzParseReply(f *testing.F) {
	for _, seed := range []string{
		"GRANTED inventory/sku-42 fence=41 handle=41-8c1f0e9b2a7d4c35 lease=30000\r\n",
		"STATUS a held=1 fence=2 ttl=3 queue=4 owner=o holders=2 limit=2 mode=shared delay=5",
		"CHANGED a held=0 fence=0 ttl=0 queue=0 cause=forced",
		"LOCK a held=1 fence=1 ttl=1 queue=0", "END count=2 next=b",
		"ERR NOTLEADER leader=127.0.0.1:7420 text", "ERR TIMEOUT", "HELD a delay=5",
		"RENEWED a fence=1 lease=1", "CURRENT a fence=1 ttl=1", "STALE a fence=0",
		"STATS connections=1 role=leader", "HELP commands: PING", "AUTHED ops",
		"PONG", "GRANTED x fence=1 handle=1-", "STATUS x held=2 fence=-1",
		"\x00\xff", "GRANTED  x   fence=1\t", "ERR  ", "A=B", "STATUS x =1",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseReply(line)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("%q: an error of another kind: %v", line, err)
			}
			return
		}
		if r.Keyword == "" {
			t.Fatalf("%q: a reply without a keyword", line)
		}
		r.info()
		r.grant(r.Name)
		r.uint("fence")
		if e := r.err(); e != nil {
			_ = e.Leader()
			_ = e.Error()
		}
	})
}

// fakeServer answers every request line with the next of replies, then
// closes; it returns its address.
func fakeServer(t *testing.T, replies ...string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func(nc net.Conn) {
				defer nc.Close()
				r := bufio.NewReader(nc)
				for _, reply := range replies {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					if _, err := nc.Write([]byte(reply)); err != nil {
						return
					}
				}
			}(nc)
		}
	}()
	return l.Addr().String()
}

func TestBadServerInputIsAnErrorNeverAPanic(t *testing.T) {
	for _, tc := range []struct{ why, reply string }{
		{"garbage", "\x00\x01garbage\r\n"},
		{"a truncated line", "GRANTED go/bad fence=1 hand"},
		{"a truncated grant", "GRANTED go/bad fence=1\r\n"},
		{"a bad handle", "GRANTED go/bad fence=1 handle=1-xyz lease=1\r\n"},
		{"another name", "GRANTED other fence=1 handle=1-8c1f0e9b2a7d4c35 lease=1\r\n"},
		{"a reply of another command", "PONG\r\n"},
		{"a keyword in lower case", "granted go/bad\r\n"},
		{"a line too long", strings.Repeat("X", MaxReplyLine+10) + "\r\n"},
		{"nothing", ""},
	} {
		addr := fakeServer(t, "PONG\r\n", tc.reply)
		cfg := testConfig(addr)
		cfg.RequestTimeout = time.Second
		cfg.FailoverTimeout = 200 * time.Millisecond
		c, err := DialConfig(ctxT(t), cfg)
		if err != nil {
			t.Fatalf("%s: dial: %v", tc.why, err)
		}
		_, err = c.Acquire(ctxT(t), "go/bad", WithWait(0))
		if err == nil {
			t.Errorf("%s: no error", tc.why)
		} else if !errors.Is(err, ErrProtocol) && !errors.Is(err, ErrConnection) {
			t.Errorf("%s: %v", tc.why, err)
		}
		c.Close()
	}
}

func TestRenewalRetriesBackOffFrom50msTo250msOrAFifteenth(t *testing.T) {
	var got []time.Duration
	var backoff time.Duration
	for i := 0; i < 5; i++ {
		var pause time.Duration
		pause, backoff = retryAfter(10*time.Second, backoff)
		got = append(got, pause)
	}
	want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond,
		200 * time.Millisecond, 250 * time.Millisecond, 250 * time.Millisecond}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pauses %v, want %v", got, want)
		}
	}
	if p, _ := retryAfter(300*time.Millisecond, 0); p != 20*time.Millisecond {
		t.Fatalf("a 300 ms lease retries after %v, want 20ms", p)
	}
}
