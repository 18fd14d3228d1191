package router

import (
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/internal/ratelog"
)

// The admin API's connection caps, before a byte is read: idle or slow
// connections (3,000 were held) must not take the descriptors the router's
// broker connections need.
const (
	adminMaxConns          = 256 // open at once, every client together
	adminMaxConnsPerClient = 16  // open at once from one client (clientKey)
)

// limitListener closes, as soon as they are accepted, the connections
// past max open at once or past perClient open from one client (an
// address, an IPv6 /64), before TLS or HTTP reads from them. Refusals are
// logged through the rate-limited logger.
type limitListener struct {
	net.Listener
	max, perClient int
	log            zerolog.Logger
	logs           *ratelog.Limiter

	mu     sync.Mutex
	open   int            // guarded by mu
	client map[string]int // open connections per client; guarded by mu
}

func newLimitListener(ln net.Listener, max, perClient int, log zerolog.Logger) net.Listener {
	return &limitListener{Listener: ln, max: max, perClient: perClient, log: log,
		logs: ratelog.New(wrongTokenLogEvery), client: map[string]int{}}
}

// Accept returns the next connection within the caps; the others are
// closed here and never reach the server.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := clientKey(c.RemoteAddr().String())
		if l.take(key) {
			return &limitedConn{Conn: c, release: func() { l.give(key) }}, nil
		}
		_ = c.Close() // refused: nothing was read, nothing to report
		l.warn(key, time.Now())
	}
}

func (l *limitListener) take(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max || l.client[key] >= l.perClient {
		return false
	}
	l.open++
	l.client[key]++
	return true
}

func (l *limitListener) give(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.client[key]--; l.client[key] <= 0 {
		delete(l.client, key)
	}
}

func (l *limitListener) warn(key string, now time.Time) {
	if l.logs.Allow("refused", now) {
		l.log.Warn().Str("client", key).Int("max", l.max).Int("max_per_client", l.perClient).
			Msg("admin API: connection refused, too many open")
	}
	for _, s := range l.logs.Due(now) {
		l.log.Warn().Uint64("count", s.Count).Dur("over", s.Over).Msg("admin API: connections refused, too many open")
	}
}

// limitedConn gives its place back once, when closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
