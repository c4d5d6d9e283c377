// helpers_test.go - the real servers the tests run: lockd (LOCKD_BIN,
// default ../../build/lockd) on a free loopback port in a fresh data
// directory, and one etcd member (ETCD_BIN, default /usr/bin/etcd) shared
// by the cluster tests.  Every process is killed by its own PID, and
// every wait here is bounded.

package lockd

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func lockdBin(t testing.TB) string {
	path := os.Getenv("LOCKD_BIN")
	if path == "" {
		path, _ = filepath.Abs("../../build/lockd")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no lockd at %s: make -j2 build/lockd, or set LOCKD_BIN", path)
	}
	return path
}

type server struct {
	t    testing.TB
	dir  string
	args []string
	port int
	cmd  *exec.Cmd
	runs int
}

var listening = regexp.MustCompile(`listening on 127\.0\.0\.1:([0-9]+)`)

// startLockd starts a lockd; the test's cleanup kills it.
func startLockd(t testing.TB, args ...string) *server {
	s := &server{t: t, dir: t.TempDir(), args: args}
	s.start()
	t.Cleanup(s.kill)
	return s
}

func (s *server) start() {
	s.t.Helper()
	end := time.Now().Add(10 * time.Second)
	for {
		if s.try() {
			return
		}
		// A restart on the same port: the port may take a moment.
		if time.Now().After(end) {
			log, _ := os.ReadFile(s.log())
			s.t.Fatalf("lockd did not start: %s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *server) log() string {
	return filepath.Join(s.dir, fmt.Sprintf("lockd.%d.log", s.runs))
}

func (s *server) try() bool {
	s.runs++
	log, err := os.Create(s.log())
	if err != nil {
		s.t.Fatal(err)
	}
	defer log.Close()
	args := append([]string{"--listen", fmt.Sprintf("127.0.0.1:%d", s.port),
		"--data-dir", filepath.Join(s.dir, "data"),
		"--journal-size", "65536"}, s.args...)
	s.cmd = exec.Command(lockdBin(s.t), args...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func(cmd *exec.Cmd) { cmd.Wait(); close(exited) }(s.cmd)
	end := time.Now().Add(5 * time.Second)
	for time.Now().Before(end) {
		text, _ := os.ReadFile(s.log())
		if m := listening.FindSubmatch(text); m != nil {
			fmt.Sscan(string(m[1]), &s.port)
			return true
		}
		select {
		case <-exited:
			s.cmd = nil
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.kill()
	return false
}

// kill is kill -9, by PID.
func (s *server) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(syscall.SIGKILL)
		for i := 0; i < 500 && s.cmd.ProcessState == nil; i++ {
			if s.cmd.Process.Signal(syscall.Signal(0)) != nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	s.cmd = nil
}

func (s *server) addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// testConfig: short timeouts, so that a failing test fails quickly.
func testConfig(endpoints ...string) Config {
	return Config{Endpoints: endpoints, DialTimeout: 3 * time.Second,
		RequestTimeout: 5 * time.Second, FailoverTimeout: 10 * time.Second}
}

func dial(t testing.TB, s *server) *Client {
	t.Helper()
	c, err := DialConfig(ctxT(t), testConfig(s.addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ctxT is a context that ends with the test, or after 30 s.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond every 20 ms for up to d.
func eventually(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

// ---- etcd: one member, shared by every cluster test ------------------------

var etcd struct {
	once sync.Once
	url  string
	cmd  *exec.Cmd
	dir  string
	err  error
}

func etcdURL(t testing.TB) string {
	etcd.once.Do(func() {
		bin := os.Getenv("ETCD_BIN")
		if bin == "" {
			bin = "/usr/bin/etcd"
		}
		etcd.dir, etcd.err = os.MkdirTemp("", "lockd-go-etcd")
		if etcd.err != nil {
			return
		}
		client, peer := freePort(t), freePort(t)
		curl := fmt.Sprintf("http://127.0.0.1:%d", client)
		purl := fmt.Sprintf("http://127.0.0.1:%d", peer)
		log, err := os.Create(filepath.Join(etcd.dir, "etcd.log"))
		if err != nil {
			etcd.err = err
			return
		}
		defer log.Close()
		etcd.cmd = exec.Command(bin, "--name", "m0", "--data-dir",
			filepath.Join(etcd.dir, "m0"), "--listen-client-urls", curl,
			"--advertise-client-urls", curl, "--listen-peer-urls", purl,
			"--initial-advertise-peer-urls", purl, "--initial-cluster",
			"m0="+purl, "--initial-cluster-state", "new")
		etcd.cmd.Stdout, etcd.cmd.Stderr = log, log
		if etcd.err = etcd.cmd.Start(); etcd.err != nil {
			return
		}
		ok := eventually(20*time.Second, func() bool {
			r, err := http.Get(curl + "/health")
			if err != nil {
				return false
			}
			defer r.Body.Close()
			var b [256]byte
			n, _ := r.Body.Read(b[:])
			return strings.Contains(string(b[:n]), `"health":"true"`)
		})
		if !ok {
			text, _ := os.ReadFile(filepath.Join(etcd.dir, "etcd.log"))
			etcd.err = fmt.Errorf("etcd did not start: %.2000s", text)
			return
		}
		etcd.url = curl
	})
	if etcd.err != nil {
		t.Fatalf("%v (tools/deps.sh test installs etcd-server, or set ETCD_BIN)", etcd.err)
	}
	return etcd.url
}

func TestMain(m *testing.M) {
	code := m.Run()
	if etcd.cmd != nil && etcd.cmd.Process != nil {
		etcd.cmd.Process.Signal(syscall.SIGKILL)
		etcd.cmd.Wait()
	}
	if etcd.dir != "" {
		os.RemoveAll(etcd.dir)
	}
	os.Exit(code)
}

// cluster starts n lockd nodes of a cluster of their own on the shared
// etcd and waits until one leads.
func cluster(t testing.TB, n int) (nodes []*server, leader int) {
	url := etcdURL(t)
	name := fmt.Sprintf("go%d", freePort(t))
	for i := 0; i < n; i++ {
		nodes = append(nodes, startLockd(t, "--etcd", url, "--cluster", name,
			"--leader-lease", "2s"))
	}
	leader = -1
	ok := eventually(20*time.Second, func() bool {
		leader = -1
		followers := 0
		for i, s := range nodes {
			switch role(s) {
			case "leader":
				leader = i
			case "follower":
				followers++
			}
		}
		return leader >= 0 && followers == n-1
	})
	if !ok {
		t.Fatalf("no leader among %d nodes", n)
	}
	return nodes, leader
}

func role(s *server) string {
	if s.cmd == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cfg := testConfig(s.addr())
	cfg.FailoverTimeout = time.Millisecond
	c, err := DialConfig(ctx, cfg)
	if err != nil {
		return ""
	}
	defer c.Close()
	st, err := c.Stats(ctx)
	if err != nil {
		return ""
	}
	return st["role"]
}
