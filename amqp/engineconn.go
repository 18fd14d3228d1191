package amqp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/fedrouter/fedrouter/amqp/engine"
)

// engineConn is a broker's connection on fedrouter's own engine
// (amqp/engine), used by every route (docs/engine.md, "Routes on the
// engine") and by the control links' size-bounded receivers
// (boundedreceiver.go). It sits beside the go-amqp connection, which
// keeps serving the rest of the control plane (QMF, the control links'
// senders, binding and queue events). It is dialled on first use and again
// after it ended; the routes that use it retry with their own backoff,
// so it has no reconnect loop of its own.
type engineConn struct {
	mu      sync.Mutex // guards conn and closed; never held while dialling
	conn    *engine.Conn
	closed  bool
	dialing chan struct{} // non-nil while one caller dials; closed when it is done
}

// Engine returns the broker's engine connection, dialling it (the
// broker's URLs in order, with its SASL, TLS and idle timeout) when
// there is none or the last one ended. An authentication failure is an
// *Error of ScopeAuth wrapping engine.ErrAuth; the caller does not retry
// it at once (the route's backoff spaces the tries).
func (c *Conn) Engine(ctx context.Context) (*engine.Conn, error) {
	e := &c.engine
	for {
		e.mu.Lock()
		switch {
		case e.closed:
			e.mu.Unlock()
			return nil, &Error{Op: "engine dial", Broker: c.cfg.Name, Scope: ScopeConn, Err: ErrClosed}
		case e.conn != nil && !ended(e.conn):
			conn := e.conn
			e.mu.Unlock()
			return conn, nil
		case e.dialing != nil: // another caller dials: wait for its result
			wait := e.dialing
			e.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, &Error{Op: "engine dial", Broker: c.cfg.Name, Scope: ScopeTimeout, Err: ctx.Err()}
			}
		}
		done := make(chan struct{})
		e.dialing = done
		e.mu.Unlock()
		conn, err := c.dialEngine(ctx)
		e.mu.Lock()
		e.dialing = nil
		close(done)
		if err == nil && e.closed {
			_ = conn.Close() // Close came while dialling
			err = &Error{Op: "engine dial", Broker: c.cfg.Name, Scope: ScopeConn, Err: ErrClosed}
		}
		if err == nil {
			e.conn = conn
		}
		e.mu.Unlock()
		return conn, err
	}
}

func ended(c *engine.Conn) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

// closeEngine closes the engine connection, if any, and refuses new ones.
func (c *Conn) closeEngine() {
	e := &c.engine
	e.mu.Lock()
	conn := e.conn
	e.conn, e.closed = nil, true
	e.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}

// dropEngine closes the engine connection, if any, and lets the next
// Engine call dial again: the settings changed (Reconfigure), and the
// routes on it re-attach over a connection made with the new ones.
func (c *Conn) dropEngine() {
	e := &c.engine
	e.mu.Lock()
	conn := e.conn
	e.conn = nil
	e.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}

// dialEngine tries the broker's URLs in order; the first that connects
// wins. Errors name the URL redacted, never a password.
func (c *Conn) dialEngine(ctx context.Context) (*engine.Conn, error) {
	cfg := c.Config() // the settings in force: a reload may have replaced them
	targets, err := cfg.engineTargets(c.opts)
	if err != nil {
		return nil, &Error{Op: "configure", Broker: c.cfg.Name, Err: err}
	}
	var errs []error
	for _, t := range targets {
		dctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
		conn, err := engine.Dial(dctx, t.hostport, t.opts)
		cancel()
		if err == nil {
			return conn, nil
		}
		if errors.Is(err, engine.ErrAuth) {
			return nil, &Error{Op: "engine dial", Broker: c.cfg.Name, Scope: ScopeAuth, Err: fmt.Errorf("%s: %w", t.redacted, err)}
		}
		errs = append(errs, fmt.Errorf("%s: %w", t.redacted, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, &Error{Op: "engine dial", Broker: c.cfg.Name, Scope: ScopeConn, Err: errors.Join(errs...)}
}

// engineTarget is one URL prepared for the engine: host:port, and the
// credentials moved into the options.
type engineTarget struct {
	hostport, redacted string
	opts               engine.Options
}

func (b *BrokerConfig) engineTargets(o ConnOptions) ([]engineTarget, error) {
	tlsConf, err := b.TLS.build()
	if err != nil {
		return nil, err
	}
	out := make([]engineTarget, 0, len(b.URLs))
	for _, raw := range b.URLs {
		u, user, pass, err := urlCredentials(raw, b.Username, b.Password)
		if err != nil {
			return nil, err
		}
		port := u.Port()
		if port == "" {
			port = "5672"
			if u.Scheme == "amqps" {
				port = "5671"
			}
		}
		// Our idle-timeout: the engine declares a peer dead after twice
		// the value it advertises; go-amqp after the value itself.
		opts := engine.Options{ContainerID: o.ContainerID, Hostname: u.Hostname(), IdleTimeout: o.IdleTimeout / 2, DialTimeout: o.ConnectTimeout}
		if u.Scheme == "amqps" {
			opts.TLS = tlsConf
		}
		switch b.mechanism(user) {
		case SASLPlain:
			opts.SASL, opts.User, opts.Password = engine.SASLPlain, user, pass
		case SASLAnonymous:
			opts.SASL = engine.SASLAnonymous
		case SASLExternal:
			opts.SASL = engine.SASLExternal
		}
		out = append(out, engineTarget{hostport: net.JoinHostPort(u.Hostname(), port), redacted: Redact(raw), opts: opts})
	}
	return out, nil
}

// EngineReceiver returns the engine receiver options for s, a source
// at a broker of profile p: its filters encoded as go-amqp encodes them
// (the peer's echo of them is not checked, as go-amqp does not).
// RabbitMQ adds a flow's link-credit to the transfers still in flight
// (docs/go-amqp-credit.md): its receivers grant only once the credit is
// spent, so that no more than the credit is ever unsettled there (what
// a router killed mid-stream sends twice).
func (s LinkSpec) EngineReceiver(p Profile) (engine.ReceiverOptions, error) {
	o := engine.ReceiverOptions{Name: s.LinkName, Address: s.Address, Capabilities: s.Capabilities,
		GrantWhenSpent: p != nil && p.Name() == "rabbitmq", Filter: engineFilters(s.Filters)}
	if s.Unsettled { // qpidd sends an exchange subscription settled otherwise
		o.Mode = engine.SettleAskUnsettled
	}
	if s.Durable { // as ReceiverOptions: the source keeps unsettled state, never expires
		o.Durable, o.ExpiryPolicy = 2, "never"
	}
	return o, nil
}

// EngineSender returns the engine sender options for s, a target: with
// a Subject, every message sent gets it (the engine rewrites the
// properties section, as Sender.Send replaces it on go-amqp).
func (s LinkSpec) EngineSender() (engine.SenderOptions, error) {
	return engine.SenderOptions{Name: s.LinkName, Address: s.Address, Capabilities: s.Capabilities, Subject: s.Subject}, nil
}
