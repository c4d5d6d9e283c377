// security_test.go - TLS (with certificates made here by crypto/x509: a
// CA, a server certificate for 127.0.0.1, a client certificate, and a CA
// that signed nothing lockd trusts) and AUTH tokens, against real lockd.

package lockd

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// certify makes a certificate for cn signed by ca (self-signed when ca
// is nil) and writes NAME.pem and NAME.key into dir.
func certify(t *testing.T, dir, name, cn string, ca *issuer, server bool) *issuer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial,
		Subject:   pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour)}
	parent, signer := tmpl, key
	switch {
	case ca == nil:
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	case server:
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	default:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	kder, _ := x509.MarshalECPrivateKey(key)
	out := &issuer{cert: cert, key: key,
		pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	os.WriteFile(filepath.Join(dir, name+".pem"), out.pem, 0o600)
	os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(
		&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return out
}

func pool(certs ...*issuer) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c.cert)
	}
	return p
}

func TestTLSAndClientCertificates(t *testing.T) {
	dir := t.TempDir()
	ca := certify(t, dir, "ca", "ca", nil, false)
	other := certify(t, dir, "other", "other", nil, false)
	certify(t, dir, "server", "server", ca, true)
	alice := certify(t, dir, "alice", "alice", ca, false)
	mallory := certify(t, dir, "mallory", "alice", other, false)
	os.WriteFile(filepath.Join(dir, "auth"), []byte("alice - lock,read alice/\n"), 0o600)
	s := startLockd(t, "--tls-cert", filepath.Join(dir, "server.pem"),
		"--tls-key", filepath.Join(dir, "server.key"),
		"--tls-client-ca", filepath.Join(dir, "ca.pem"),
		"--auth", filepath.Join(dir, "auth"))
	ctx := ctxT(t)
	withCert := func(who *issuer, roots *x509.CertPool) Config {
		cfg := testConfig(s.addr())
		// A refusal would otherwise be retried for 10 s.
		cfg.FailoverTimeout = 300 * time.Millisecond
		cfg.TLS = &tls.Config{RootCAs: roots}
		if who != nil {
			cfg.TLS.Certificates = []tls.Certificate{{
				Certificate: [][]byte{who.cert.Raw}, PrivateKey: who.key}}
		}
		return cfg
	}
	c, err := DialConfig(ctx, withCert(alice, pool(ca)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Acquire(ctx, "alice/tls")
	if err != nil {
		t.Fatalf("alice over TLS: %v", err)
	}
	if _, err := c.Try(ctx, "bob/tls"); !errors.Is(err, ErrDenied) {
		t.Fatalf("outside alice's prefix: %v", err)
	}
	l.Release(ctx)
	// lockds:// with the server named as the certificate names it.
	cfg := withCert(alice, pool(ca))
	cfg.Endpoints = []string{"lockds://localhost:" + portOf(s)}
	if c2, err := DialConfig(ctx, cfg); err != nil {
		t.Fatalf("lockds://localhost: %v", err)
	} else {
		c2.Close()
	}
	// A server this client cannot verify, and certificates lockd refuses.
	if _, err := DialConfig(ctx, withCert(alice, pool(other))); !errors.Is(err, ErrConnection) {
		t.Fatalf("unverified server: %v", err)
	}
	for _, who := range []*issuer{nil, mallory} {
		c, err := DialConfig(ctx, withCert(who, pool(ca)))
		if err == nil {
			_, err = c.Try(ctx, "alice/tls")
			c.Close()
		}
		if err == nil {
			t.Fatal("granted without alice's certificate")
		}
	}
}

func portOf(s *server) string {
	_, port, _ := net.SplitHostPort(s.addr())
	return port
}

func TestTokens(t *testing.T) {
	dir := t.TempDir()
	sum := sha256.Sum256([]byte("s3cret"))
	os.WriteFile(filepath.Join(dir, "auth"), []byte("ops "+
		hex.EncodeToString(sum[:])+" lock,read,admin ops/\n"), 0o600)
	s := startLockd(t, "--auth", filepath.Join(dir, "auth"))
	ctx := ctxT(t)
	cfg := testConfig(s.addr())
	cfg.Token = "s3cret"
	c, err := DialConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Acquire(ctx, "ops/token")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stats(ctx); err != nil {
		t.Fatalf("admin STATS: %v", err)
	}
	l.Release(ctx)
	cfg.Token = "wrong"
	if _, err := DialConfig(ctx, cfg); !errors.Is(err, ErrDenied) {
		t.Fatalf("a wrong token: %v", err)
	}
	cfg.Token = "two words"
	if _, err := DialConfig(ctx, cfg); !errors.Is(err, ErrBadArg) {
		t.Fatalf("a token of two words: %v", err)
	}
	// No token: PING works, a lock command is denied.
	n := dial(t, s)
	if _, err := n.Try(ctx, "ops/token"); !errors.Is(err, ErrDenied) {
		t.Fatalf("no token: %v", err)
	}
}
