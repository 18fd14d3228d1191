package engine

import (
	"crypto/tls"
	"time"
)

// SASL mechanisms the engine speaks.
const (
	SASLNone      = ""          // no SASL layer
	SASLAnonymous = "ANONYMOUS" // anonymous
	SASLPlain     = "PLAIN"     // user name and password (RFC 4616)
	SASLExternal  = "EXTERNAL"  // the TLS client certificate
)

// Options configure a connection. The zero value is usable: every limit
// left at zero takes the default documented on its field.
type Options struct {
	// TLS, when set, secures the TCP connection before AMQP starts.
	TLS *tls.Config
	// SASL mechanism (SASLNone, SASLAnonymous, SASLPlain, SASLExternal),
	// and the identity for PLAIN.
	SASL     string
	User     string
	Password string
	// ContainerID and Hostname go in our open; ContainerID defaults to a
	// random one, Hostname to the dialled host.
	ContainerID string
	Hostname    string
	// MaxFrameSize is the largest frame we accept (default 64 KiB, at
	// least 512); a peer's frame above it is a connection error.
	MaxFrameSize uint32
	// ChannelMax is the highest channel the peer may use (default
	// 65535, as go-amqp). The peer answers each session we begin on a
	// channel of its choosing, and refuses to begin one of its own
	// (onBegin): what a session costs is bounded by the sessions we
	// begin, not by this. A router begins two per route on the engine;
	// 255 cut a router off at ~127 routes per broker connection (the
	// peer's answer on channel 256 was a framing error, the connection
	// and every route on it lost, again at each retry).
	ChannelMax uint16
	// HandleMax is the highest link handle the peer may use in a session
	// (default 1023).
	HandleMax uint32
	// IdleTimeout is advertised to the peer (default 60 s; negative:
	// none); a peer silent for twice it is a connection error.
	IdleTimeout time.Duration
	// WriteBuffer bounds the outgoing buffer in bytes (default 1 MiB):
	// appenders wait for room, outside any lock. One message larger than
	// it is let through alone.
	WriteBuffer int
	// DialTimeout bounds TCP, TLS, SASL and open (default 30 s).
	DialTimeout time.Duration
	// CloseTimeout bounds waiting for the peer's close (default 2 s).
	CloseTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.MaxFrameSize == 0 {
		o.MaxFrameSize = 64 << 10
	}
	o.MaxFrameSize = max(o.MaxFrameSize, 512)
	if o.ChannelMax == 0 {
		o.ChannelMax = 65535
	}
	if o.HandleMax == 0 {
		o.HandleMax = 1023
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.WriteBuffer <= 0 {
		o.WriteBuffer = 1 << 20
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 30 * time.Second
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = 2 * time.Second
	}
	return o
}

// SessionOptions configure a session.
type SessionOptions struct {
	// IncomingWindow is how many transfer frames the peer may send before
	// we reopen the window (default 2048); a frame beyond it is a
	// session-window violation.
	IncomingWindow uint32
}

// SettleMode is how a link settles its deliveries.
type SettleMode uint8

// Settle modes: unsettled (the receiver's outcome settles, at-least-once),
// or settled before sending (at-most-once). SettleAskUnsettled, on a
// receiver: ask the sender to send every delivery unsettled (snd-settle-
// mode unsettled; qpidd sends exchange subscriptions settled otherwise).
const (
	SettleUnsettled SettleMode = iota
	SettlePresettled
	SettleAskUnsettled
)

// ReceiverOptions configure a receiver link.
type ReceiverOptions struct {
	Name    string
	Address string
	// Credit is the window of deliveries the peer may send ahead and we
	// hold unsettled (default 100). Credit is granted again as deliveries
	// are settled, a half window at a time.
	Credit uint32
	// Mode asks the sender to send settled (SettlePresettled) or not.
	Mode SettleMode
	// MaxMessageSize bounds a reassembled multi-frame message (default
	// 64 MiB); a longer one detaches the link with
	// amqp:link:message-size-exceeded.
	MaxMessageSize uint64
	// DiscardOversize: instead of detaching, read a message over
	// MaxMessageSize to its end without keeping it, and deliver it marked
	// Delivery.Oversize for the caller to settle (reject). A detach would
	// leave it unsettled, and a broker gives it to the next attach again.
	DiscardOversize bool
	// AckN: a disposition after at most AckN settled deliveries (0 or 1:
	// at once). AckDelay bounds how long a settlement waits (default 5 ms).
	AckN     int
	AckDelay time.Duration
	// Durable and ExpiryPolicy of the source terminus.
	Durable      uint32
	ExpiryPolicy string
	// Filter is the source's filter set, encoded (a wire map).
	Filter []byte
	// Capabilities of the source terminus (e.g. "queue", "topic").
	Capabilities []string
	// GrantWhenSpent grants credit again only once the peer has used
	// all it had (by our count), instead of at half the window: for a
	// peer that adds a flow's link-credit to the transfers still in
	// flight (RabbitMQ 3.10), so that no more than Credit deliveries are
	// ever unsettled there. Fewer, larger grants; a round trip each.
	GrantWhenSpent bool
	// limit, when set, caps the credit granted (Forward: the
	// destination's credit); it must not take a lock.
	limit func() uint32
	// OnMessage is called on the connection's reader goroutine for each
	// complete delivery. It must not block for long (it holds up the
	// connection) and must not keep d or d.Payload after it returns.
	OnMessage func(d *Delivery)
}

// SenderOptions configure a sender link.
type SenderOptions struct {
	Name    string
	Address string
	// Mode: SettleUnsettled (default) waits for the peer's outcome,
	// reported through OnSettled; SettlePresettled sends settled.
	Mode SettleMode
	// Durable and ExpiryPolicy of the target terminus.
	Durable      uint32
	ExpiryPolicy string
	// Capabilities of the target terminus (e.g. "queue", "topic").
	Capabilities []string
	// Subject, when set, is the subject every message sent gets: the
	// properties section of the bare message rewritten, its subject
	// field set (one added when it has none), everything else as it
	// came (wire.AppendBareWithSubject). A broker whose exchange routes
	// by subject (qpidd) routes it by this key. A message whose
	// properties do not decode is not sent: the send's error is
	// ErrUnwritable (and wraps the wire.ErrDecode that says why); a
	// forwarder rejects it at the source with amqp:decode-error, or
	// dead-letters it.
	Subject string
	// OnSettled is called on the reader goroutine with the peer's
	// outcome for the deliveries first..last of this session (it may
	// span ids of other senders on the same session: ignore those).
	OnSettled func(first, last uint32, state *DeliveryState)
	// OnCredit is called on the reader goroutine when the peer grants
	// credit or reopens the session window.
	OnCredit func()
}
