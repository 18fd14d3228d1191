package topology

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Limits of the wire format. They bound what a peer (or an attacker with
// the secret) can make a router hold; docs/routing-protocol.md lists them.
const (
	// ProtocolVersion is the protocol version this package speaks. 2 added
	// the signed origination time (LSA.Time); version 1 advertisements,
	// which have none and could be replayed for ever, are refused.
	ProtocolVersion = 2
	MaxLSASize      = 64 << 10 // bytes of one encoded LSA
	MaxBrokers      = 256      // brokers per LSA
	MaxLinks        = 1024     // links per LSA
	MaxExt          = 32       // extension entries per LSA
	MaxNameLen      = 128      // router, broker and extension names
	MaxStateLen     = 32       // broker state names
	MaxCost         = 1 << 24  // link cost; path sums stay far from overflow
	macLen          = sha256.Size
	macDomain       = "fedrouter-lsa/"
)

// StateOperational is the broker state in which its links can carry traffic
// (the name qpid-route's `link list` uses).
const StateOperational = "Operational"

// Errors of Decode and Encode. Every error they return wraps one of these
// (with the detail after it), so errors.Is tells the reason, and the node
// counts by it.
var (
	ErrTooLarge     = errors.New("topology: LSA too large")
	ErrMalformed    = errors.New("topology: malformed LSA")
	ErrUnsigned     = errors.New("topology: unsigned LSA")
	ErrBadSignature = errors.New("topology: bad LSA signature")
	ErrVersion      = errors.New("topology: unknown protocol version")
	ErrNoSecret     = errors.New("topology: no network secret")
)

// VersionError is an LSA in a protocol version this router does not speak.
// It unwraps to ErrVersion.
type VersionError struct{ Version int }

func (e *VersionError) Error() string {
	return fmt.Sprintf("topology: unknown protocol version %d (this router speaks %d)", e.Version, ProtocolVersion)
}

func (e *VersionError) Unwrap() error { return ErrVersion }

// LSA is one router's link-state advertisement: who it is, which brokers it
// is attached to and in which state, and the federation links it holds.
type LSA struct {
	// Version is the protocol version of the envelope: Decode sets it, Encode
	// writes it (0 means ProtocolVersion). Not part of the signed body's JSON.
	Version  int    `json:"-"`
	Router   string `json:"router"`
	Instance int64  `json:"instance"` // the router's start time: a restart is a new, larger instance
	Seq      uint64 `json:"seq"`      // per instance, from 1, increasing with every origination
	// Time is when the originator made this LSA, in Unix nanoseconds by its
	// own clock, signed with the rest: a receiver refuses an LSA older than
	// MaxAge (plus the skew allowance) by this time, so a captured LSA
	// cannot be replayed once that window is over, whatever it remembers.
	Time    int64         `json:"time"`
	Brokers []BrokerState `json:"brokers"`
	Links   []Link        `json:"links"`
	// Ext holds later additions (addresses, demand). Unknown keys are kept
	// as they are and flooded on, so old routers carry new routers' data.
	Ext map[string]json.RawMessage `json:"ext,omitempty"`
}

// BrokerState is a broker the router is attached to and its connection
// state as the router sees it (StateOperational, or e.g. Waiting, Failed).
type BrokerState struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

// Operational reports whether the broker's links may carry traffic.
func (b BrokerState) Operational() bool { return b.State == StateOperational }

// Link is a directed federation link held by the router: messages flow
// From → To. Up is the router's own view of the link; the edge in the
// graph is up only if both brokers are Operational too.
type Link struct {
	From string `json:"from"`
	To   string `json:"to"`
	Cost int64  `json:"cost"`
	Up   bool   `json:"up"`
}

// Origin is what an advertisement says about where it comes from: its
// router, that router's run (instance) and origination (seq). Enough to
// order two advertisements of one router (Newer) without the rest.
type Origin struct {
	Router   string
	Instance int64
	Seq      uint64
}

// Origin returns the LSA's origin.
func (l LSA) Origin() Origin { return Origin{l.Router, l.Instance, l.Seq} }

// Newer reports whether o supersedes p (both of one router): a later
// instance wins whatever its sequence number, then the higher sequence.
func (o Origin) Newer(p Origin) bool {
	if o.Instance != p.Instance {
		return o.Instance > p.Instance
	}
	return o.Seq > p.Seq
}

// newer reports whether a supersedes b: a later instance (a restart) wins
// whatever its sequence number, then the higher sequence number.
func (l LSA) newer(b LSA) bool { return l.Origin().Newer(b.Origin()) }

// Encode signs and serialises an LSA:
//
//	{"v":1,"lsa":{...},"mac":"<base64 HMAC-SHA256>"}
//
// where the MAC covers "fedrouter-lsa/<v>\n" followed by the exact bytes of
// the "lsa" value, so neither the body nor its version can be altered.
func Encode(l LSA, secret []byte) ([]byte, error) {
	if len(secret) == 0 {
		return nil, ErrNoSecret
	}
	if err := l.validate(); err != nil {
		return nil, err
	}
	v := l.Version
	if v == 0 {
		v = ProtocolVersion
	}
	body, err := json.Marshal(l)
	if err != nil { // only a bad Ext value can fail here
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err := checkSize(wireSize(v, body)); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"v":` + strconv.Itoa(v) + `,"lsa":`)
	b.Write(body)
	b.WriteString(`,"mac":"` + base64.StdEncoding.EncodeToString(sign(secret, v, body)) + `"}`)
	return b.Bytes(), nil
}

// wireSize is the length of Encode's output for a body.
func wireSize(v int, body []byte) int {
	return len(`{"v":,"lsa":,"mac":""}`) + len(strconv.Itoa(v)) + len(body) + base64.StdEncoding.EncodedLen(macLen)
}

func checkSize(n int) error {
	if n > MaxLSASize {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, n, MaxLSASize)
	}
	return nil
}

// envelope is the outer object; pointers tell a missing field from a zero.
type envelope struct {
	V   *int            `json:"v"`
	LSA json.RawMessage `json:"lsa"`
	MAC *string         `json:"mac"`
}

// Decode checks and parses an encoded LSA, in this order: size, envelope,
// signature, version, body. The signature comes before the version so that
// only holders of the secret can make a router report a version; the
// envelope and MAC are therefore frozen across versions. Decode never
// panics, whatever the input.
func Decode(data, secret []byte) (LSA, error) {
	if len(secret) == 0 {
		return LSA{}, ErrNoSecret
	}
	if err := checkSize(len(data)); err != nil {
		return LSA{}, err
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return LSA{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if env.V == nil || len(env.LSA) == 0 {
		return LSA{}, fmt.Errorf("%w: want an object with v, lsa and mac", ErrMalformed)
	}
	if err := verify(env, secret); err != nil {
		return LSA{}, err
	}
	if *env.V != ProtocolVersion {
		return LSA{}, &VersionError{Version: *env.V}
	}
	return decodeBody(env.LSA)
}

func decodeBody(body []byte) (LSA, error) {
	var l LSA
	if err := json.Unmarshal(body, &l); err != nil {
		return LSA{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	l.Version = ProtocolVersion
	l.normalizeExt()
	if err := l.validate(); err != nil {
		return LSA{}, err
	}
	// Missing fields and escapes can make the canonical form longer than
	// what came in; refuse what this router could not send on itself.
	canon, err := json.Marshal(l)
	if err != nil {
		return LSA{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err := checkSize(wireSize(ProtocolVersion, canon)); err != nil {
		return LSA{}, err
	}
	return l, nil
}

// normalizeExt stores extension values as Encode would write them
// (compact, HTML-escaped) and an empty map as nil, so that decoding what
// was encoded from a decoded LSA gives that LSA again.
func (l *LSA) normalizeExt() {
	if len(l.Ext) == 0 {
		l.Ext = nil
		return
	}
	for k, raw := range l.Ext {
		if b, err := json.Marshal(raw); err == nil {
			l.Ext[k] = b
		}
	}
}

func verify(env envelope, secret []byte) error {
	if env.MAC == nil || *env.MAC == "" {
		return ErrUnsigned
	}
	mac, err := base64.StdEncoding.DecodeString(*env.MAC)
	if err != nil || len(mac) != macLen {
		return fmt.Errorf("%w: the mac is not a base64 HMAC-SHA256", ErrBadSignature)
	}
	if !hmac.Equal(mac, sign(secret, *env.V, env.LSA)) {
		return ErrBadSignature
	}
	return nil
}

func sign(secret []byte, v int, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(macDomain + strconv.Itoa(v) + "\n"))
	h.Write(body)
	return h.Sum(nil)
}
