package adminclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// deadURL is a loopback address nothing listens on (just closed).
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// A cluster's members as fallbacks: a router that cannot be dialled gives
// way to the next; one that answers, even with an error, does not (the
// request may have been acted on).
func TestFallbacks(t *testing.T) {
	var hits atomic.Int64
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[]`))
	}))
	defer live.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"the cluster store is unreachable; retry later"}`, http.StatusServiceUnavailable)
	}))
	defer failing.Close()

	c, err := New(deadURL(t), Options{Fallbacks: []string{deadURL(t), live.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Routes(context.Background()); err != nil || hits.Load() != 1 {
		t.Fatalf("through two dead routers to the live one: %v (hits %d)", err, hits.Load())
	}

	c2, err := New(failing.URL, Options{Fallbacks: []string{live.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_, err = c2.Routes(context.Background())
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || hits.Load() != 1 {
		t.Fatalf("an answering router's error: %v (hits %d); want its 503, no fallback", err, hits.Load())
	}
	if _, err := New(live.URL, Options{Fallbacks: []string{"ftp://x"}}); !errors.Is(err, ErrBadURL) {
		t.Fatalf("a bad fallback URL: %v; want ErrBadURL", err)
	}
}
