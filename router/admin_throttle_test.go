package router

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func waitOf(th *throttle, client string, now time.Time) time.Duration {
	w, _ := th.wait(client, now)
	return w
}

// A client turned away is never forgotten before its block ends, however
// many new clients arrive (the issue: the eviction of tracked clients
// freed the blocked one, which then got 200).
func TestThrottleNeverForgetsABlockedClient(t *testing.T) {
	th := newThrottle()
	th.capacity, th.globalMax, th.bucket = 3, 1_000_000, 1_000_000 // the per-client rule alone
	now := time.Unix(1000, 0)
	for _, c := range []string{"b1", "b2"} {
		for range throttleMax {
			th.fail(c, now)
		}
	}
	for i := range 10_000 {
		th.fail(fmt.Sprintf("new%d", i), now)
	}
	for _, c := range []string{"b1", "b2"} {
		if waitOf(th, c, now) == 0 {
			t.Fatalf("%s was forgotten while turned away", c)
		}
	}
	for range throttleMax { // fills the last slot with a third blocked client
		th.fail("b3", now)
	}
	if th.size() != 3 || waitOf(th, "b3", now) == 0 {
		t.Fatalf("%d tracked, b3 waits %s", th.size(), waitOf(th, "b3", now))
	}
	if b := th.fail("untracked", now); b != 0 || th.size() != 3 {
		t.Fatalf("a client past a map of blocked ones: blocked %s, %d tracked", b, th.size())
	}
}

// The attack against the throttle itself: 4 guesses from each of
// 1,100 addresses, then 1 from each of 3,100 more, at once. Guesses
// compared are bounded by the global rate: throttleGlobal at once, then
// one a second.
func TestThrottleBoundsGuessesFromManyAddresses(t *testing.T) {
	th := newThrottle()
	now := time.Unix(1000, 0)
	compared := 0
	guess := func(client string) {
		if waitOf(th, client, now) > 0 {
			return
		}
		compared++
		th.fail(client, now)
	}
	for i := range 1100 {
		for range 4 {
			guess(fmt.Sprintf("10.0.%d.%d", i/256, i%256))
		}
	}
	for i := range 3100 {
		guess(fmt.Sprintf("10.1.%d.%d", i/256, i%256))
	}
	if compared != throttleGlobal {
		t.Fatalf("%d of 7,500 guesses compared at once, want %d", compared, throttleGlobal)
	}
	now = now.Add(10 * time.Second)
	for i := range 100 {
		guess(fmt.Sprintf("10.2.0.%d", i))
	}
	if compared != throttleGlobal+10 {
		t.Fatalf("%d guesses compared 10 s later, want %d (one a second)", compared, throttleGlobal+10)
	}
}

// The attack over HTTP, from many loopback source addresses (127.0.0.x):
// the blocked client stays blocked, the guesses that get their token
// compared are bounded by the global rate, and the warnings logged are a
// few lines, not one a guess. The guard's clock is held still, so the
// bound is exact on a slow machine.
func TestAdminWrongTokenFloodFromManyAddresses(t *testing.T) {
	h := startAdmin(t)
	now := time.Unix(1000, 0)
	h.srv.guard.now = func() time.Time { return now }
	var compared, refused atomic.Int64
	get := func(src, token string) int {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequest("GET", h.base+"/api/v1/routes", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case 401:
			compared.Add(1)
		case 429:
			refused.Add(1)
		}
		return resp.StatusCode
	}
	for range throttleMax {
		get("127.0.0.2", "guess-guess-guess-guess")
	}
	if code := get("127.0.0.2", testToken); code != 429 {
		t.Fatalf("the blocked client with the right token: %d, want 429", code)
	}
	for i := range 200 {
		src := fmt.Sprintf("127.0.%d.%d", 1+i/250, 3+i%250)
		for range 4 {
			get(src, "guess-guess-guess-guess")
		}
	}
	if got := compared.Load(); got > throttleGlobal {
		t.Fatalf("%d wrong tokens compared, want at most %d (the global rate)", got, throttleGlobal)
	}
	if refused.Load() < 800-throttleGlobal {
		t.Fatalf("only %d guesses refused", refused.Load())
	}
	now = now.Add(throttleBlock / 2)
	if code := get("127.0.0.2", testToken); code != 429 {
		t.Fatalf("the blocked client after the flood: %d, want 429 (still turned away)", code)
	}
	now = now.Add(throttleBlock)
	if code := get("127.0.0.2", testToken); code != 200 {
		t.Fatalf("the client after its block with the right token: %d, want 200", code)
	}
	if n := strings.Count(h.log.String(), "admin API: wrong token"); n > 3 {
		t.Fatalf("%d wrong-token lines logged for %d guesses, want a few:\n%s", n, compared.Load()+refused.Load(), h.log.String())
	}
}
