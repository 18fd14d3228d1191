package adminclient

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/fedrouter/fedrouter/router"
	"github.com/fedrouter/fedrouter/router/routertest"
)

// TestTLS: an https router is reached with its certificate as CAFile, and
// not without it.
func TestTLS(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	certFile, keyFile, err := routertest.WriteSelfSigned(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := router.NewAdminServer(routertest.New(routertest.Options{RouterID: "tls"}),
		router.AdminOptions{Listen: "127.0.0.1:0", Token: testToken, CertFile: certFile, KeyFile: keyFile, Log: zerolog.Nop()})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	url := srv.Scheme() + "://" + srv.Addr()
	c, err := New(url, Options{Token: testToken, CAFile: certFile})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ri, err := c.Router(context.Background()); err != nil || ri.RouterID != "tls" {
		t.Fatalf("over TLS: %+v %v", ri, err)
	}
	untrusting, err := New(url, Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer untrusting.Close()
	if _, err := untrusting.Router(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v", err)
	}
	if _, err := New(url, Options{CAFile: keyFile}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("a key as CA file: %v", err)
	}
}
