package amqp_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// tlsFront terminates TLS on a loopback port and pipes to backend, so a
// real broker can be reached over amqps without configuring its TLS.
// It returns the listener's address and the CA file to trust.
func tlsFront(t *testing.T, backend string) (addr, caFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fedrouter test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			front, err := ln.Accept()
			if err != nil {
				return
			}
			back, err := net.Dial("tcp", backend)
			if err != nil {
				_ = front.Close() // the client sees it refused, as intended
				continue
			}
			mu.Lock()
			open = append(open, front, back)
			mu.Unlock()
			wg.Add(2)
			// Copy errors and close errors mean the other side went: the
			// proxy only has to end the pair.
			go func() { defer wg.Done(); _, _ = io.Copy(back, front); _ = back.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(front, back); _ = front.Close() }()
		}
	}()
	t.Cleanup(func() { // teardown: close errors are of no interest
		_ = ln.Close()
		mu.Lock()
		conns := append([]net.Conn(nil), open...)
		mu.Unlock()
		for _, c := range conns { // no I/O under mu
			_ = c.Close()
		}
		wg.Wait()
	})
	return ln.Addr().String(), caFile
}

func TestIntegrationTLS(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	addr, ca := tlsFront(t, b.Addr())

	cfg := b.Config()
	cfg.URLs = []string{"amqps://" + addr}
	cfg.TLS.CAFile = ca
	c := brokertest.Dial(t, cfg, amqp.ConnOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, _, err := c.WaitOperational(ctx); err != nil {
		t.Fatal(err)
	}
	q := brokertest.UniqueName(t, "tls")
	brokertest.DeclareQueue(t, b.Config(), q)
	s := brokertest.Session(t, c)
	brokertest.SendAll(t, s, "/amq/queue/"+q, 10, 10, brokertest.Body)
	brokertest.ReceiveN(t, brokertest.OpenReceiver(t, s, amqp.LinkSpec{Address: "/amq/queue/" + q}, 10), 10, 20*time.Second)

	// Without the CA the certificate is not trusted: the connection keeps
	// retrying (Waiting) with the verification error, it does not fail for good.
	cfg.TLS.CAFile = ""
	bad := brokertest.Dial(t, cfg, amqp.ConnOptions{Backoff: amqp.Backoff{Min: time.Second, Max: time.Second}})
	brokertest.Eventually(t, 20*time.Second, 20*time.Millisecond, func() error {
		st, _ := bad.Status()
		if st.State == amqp.Waiting && st.LastError != nil && strings.Contains(st.LastError.Error(), "certificate") {
			return nil
		}
		return &stateErr{st}
	})
}

type stateErr struct{ st amqp.Status }

func (e *stateErr) Error() string { return e.st.State.String() + ": " + errString(e.st.LastError) }

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
