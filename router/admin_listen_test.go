package router

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Idle connections, before any authentication, are capped per client and
// overall: the ones past the caps are closed at once and never answered;
// the server still serves afterwards. (3,000 idle connections used to be
// held, and the router's broker dials then failed for want of
// descriptors.)
func TestAdminCapsIdleConnections(t *testing.T) {
	h := startAdmin(t)
	addr := strings.TrimPrefix(h.base, "http://")
	dial := func(src string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// answered sends a request on c and says whether an answer came.
	answered := func(c net.Conn) bool {
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			return false
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == 200
	}
	count := func(conns []net.Conn) int {
		n := 0
		for _, c := range conns {
			if answered(c) {
				n++
			}
		}
		return n
	}
	closeAll := func(conns []net.Conn) {
		for _, c := range conns {
			_ = c.Close()
		}
	}

	var one []net.Conn
	for range adminMaxConnsPerClient + 10 {
		one = append(one, dial("127.0.0.9"))
	}
	if n := count(one); n > adminMaxConnsPerClient || n == 0 {
		t.Fatalf("%d of %d idle connections from one address answered, want 1..%d", n, len(one), adminMaxConnsPerClient)
	}
	closeAll(one)

	var many []net.Conn
	for i := range adminMaxConns + 60 {
		many = append(many, dial(fmt.Sprintf("127.0.1.%d", 1+i%30)))
	}
	if n := count(many); n > adminMaxConns || n == 0 {
		t.Fatalf("%d of %d idle connections answered, want 1..%d", n, len(many), adminMaxConns)
	}
	closeAll(many)

	// The places come back once the connections close.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c := dial("127.0.0.9")
		ok := answered(c)
		_ = c.Close()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a new connection is not served after the others closed")
		}
	}
	if !strings.Contains(h.log.String(), "connection refused, too many open") {
		t.Fatalf("refusals not logged:\n%s", h.log.String())
	}
}
