package amqp

import (
	"context"
	"crypto/tls"
	"net"
	"net/url"

	goamqp "github.com/Azure/go-amqp"
)

// dialNet opens t's TCP (or TLS) connection ourselves and hands it to
// go-amqp wrapped in a coalescingConn (writeBuffer bytes; < 0: unwrapped),
// which go-amqp's own Dial gives no way to do. What go-amqp's Dial would
// do with the URL is done here: the default ports, and the TLS server
// name taken from the host unless configured.
func dialNet(ctx context.Context, t dialTarget, writeBuffer int) (*goamqp.Conn, error) {
	u, err := url.Parse(t.addr)
	if err != nil {
		return nil, err
	}
	host, port := u.Hostname(), u.Port()
	tlsOn := u.Scheme == "amqps"
	if port == "" {
		port = "5672"
		if tlsOn {
			port = "5671"
		}
	}
	addr := net.JoinHostPort(host, port)
	var nc net.Conn
	if tlsOn {
		cfg := &tls.Config{}
		if t.opts.TLSConfig != nil {
			cfg = t.opts.TLSConfig.Clone()
		}
		if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
			cfg.ServerName = host
		}
		nc, err = (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", addr)
	} else {
		nc, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	// Above TLS, the peer's bytes as go-amqp will read them: messages
	// whose annotations would make go-amqp panic are made undecodable
	// (keyguard.go).
	nc = newGuardedConn(nc)
	if writeBuffer >= 0 {
		// Above TLS: coalesced frames make fewer, fuller TLS records too.
		nc = newCoalescingConn(nc, writeBuffer)
	}
	opts := *t.opts
	opts.TLSConfig = nil // the connection is already secured; go-amqp must not start TLS again
	conn, err := goamqp.NewConn(ctx, nc, &opts)
	if err != nil {
		// go-amqp closes nc when the handshake fails, not when it refuses
		// the options: close it either way (a second Close is harmless).
		_ = nc.Close()
		return nil, err
	}
	return conn, nil
}
