package engine_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
)

// tlsProxy terminates TLS on a loopback port with a fresh self-signed
// certificate and pipes each connection to backend; it returns its
// address and a pool trusting the certificate.
func tlsProxy(t *testing.T, backend string) (string, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "h-engine"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) { mu.Lock(); conns = append(conns, c); mu.Unlock() }
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
				_ = front.Close()
				continue
			}
			track(front)
			track(back)
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(back, front); _ = back.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(front, back); _ = front.Close() }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String(), pool
}

// The engine over TLS (a TLS front before RabbitMQ): the certificate is
// verified, messages cross; an untrusted certificate is refused.
func TestConformanceTLS(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	addr, pool := tlsProxy(t, b.Addr())
	q := queue(t, b)
	c, err := engine.Dial(t.Context(), addr, engine.Options{TLS: &tls.Config{RootCAs: pool},
		SASL: engine.SASLPlain, User: "guest", Password: "guest"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	s := session(t, c, engine.SessionOptions{})
	const n = 100
	out := newOutcomes(n)
	snd, err := s.NewSender(t.Context(), engine.SenderOptions{Address: q, OnSettled: out.onSettled})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := snd.Send(t.Context(), encodeMessage(fmt.Sprint(i), body(i, 200))); err != nil {
			t.Fatal(err)
		}
	}
	out.wait(t, n, 20*time.Second)
	col := newCollector(n)
	if _, err := s.NewReceiver(t.Context(), engine.ReceiverOptions{Address: q, OnMessage: col.onMessage}); err != nil {
		t.Fatal(err)
	}
	col.take(t, n, 20*time.Second)

	if _, err := engine.Dial(t.Context(), addr, engine.Options{TLS: &tls.Config{}, SASL: engine.SASLAnonymous}); err == nil {
		t.Fatal("an untrusted certificate was accepted")
	}
}
