// Package routespec is what a route is, in the words the configuration
// file, the admin API and the CLI share: its specification (Spec: kind,
// brokers, options, defaults and limits, identity, JSON) and the rules
// that judge it (Check), and what the router reports of it (Status,
// LinkStatus, TransitStatus). It is a leaf — the standard library, the
// pure path-policy vocabulary and internal/redact — so that a client of
// the admin API (api/, adminclient/) needs neither the router nor what it
// is built on. Package routes re-exports every name with type aliases.
package routespec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fedrouter/fedrouter/internal/redact"
)

// Kind is the kind of route, as qpid-route has them.
type Kind string

const (
	// KindQueue: consume a source queue, deliver to the destination
	// exchange (or address).
	KindQueue Kind = "queue"
	// KindExchange: a private subscription on the source exchange with a
	// binding key, delivered to the exchange of the same name (or
	// DestExchange) on the destination.
	KindExchange Kind = "exchange"
	// KindDynamic: a private subscription on the source exchange whose
	// bindings follow the demand at the destination exchange of the same
	// name — its bindings to queues, and to exchanges with demand when
	// DivertBindings is on (qpid-route's dynamic routes).
	KindDynamic Kind = "dynamic"
)

// RejectPolicy says what happens to a message the destination rejected, or
// gave no outcome for within OutcomeTimeout (RabbitMQ's answer to an
// unroutable message).
type RejectPolicy string

const (
	// RejectAtSource rejects the message at the source broker, so the
	// source's own dead-lettering (or dropping) applies. The default.
	RejectAtSource RejectPolicy = "reject"
	// DeadLetter sends the message, annotated with the reason, to the
	// DeadLetterQueue on the source broker, then settles it at the source.
	DeadLetter RejectPolicy = "dead-letter"
)

// Defaults of a route's options; docs/configuration.md lists them.
const (
	// DefaultCredit, measured (docs/performance.md, "The hot path", on
	// go-amqp then): on RabbitMQ a receiver must use up a grant before
	// the next (docs/go-amqp-credit.md; the engine's receivers there grant
	// when spent too) and the broker idles ~15 ms after each; 2,000 makes
	// grants of 1,000, a quarter as many as 500 did: +12 % with one
	// route, +27 % with eight. The memory it allows
	// per route is credit × message size (2,000 × 16 KiB = 32 MiB).
	DefaultCredit         = 2000
	DefaultCost           = 1
	DefaultOutcomeTimeout = 30 * time.Second
	MaxCredit             = 10000
	// ConnIdleTimeout is the broker connections' idle timeout
	// (amqp.DefaultIdleTimeout, which this leaf cannot import; a test in
	// routes holds the two equal): a route's outcome timeout must be
	// longer.
	ConnIdleTimeout = 10 * time.Second
)

// Spec is a route as the operator states it, in the config file, the admin
// API and the CLI alike.
type Spec struct {
	Kind Kind   `json:"kind" yaml:"kind"`
	Dest string `json:"dest" yaml:"dest"` // destination broker (configured name)
	Src  string `json:"src" yaml:"src"`   // source broker (configured name)
	// Exchange: for a queue route the destination exchange or address; for
	// an exchange route the source exchange (and the destination's, unless
	// DestExchange is set).
	Exchange     string `json:"exchange" yaml:"exchange"`
	Queue        string `json:"queue,omitempty" yaml:"queue"`                 // queue route: the source queue
	Key          string `json:"key,omitempty" yaml:"key"`                     // exchange route: the binding key
	DestExchange string `json:"dest_exchange,omitempty" yaml:"dest_exchange"` // exchange route: other destination name
	// DivertBindings (dynamic routes): count an exchange-to-exchange
	// binding at the destination as demand when the exchange it leads to
	// has demand. Off by default: it costs more management calls and
	// changes what crosses.
	DivertBindings bool `json:"divert_bindings,omitempty" yaml:"divert_bindings"`
	// DestQueue (queue routes): deliver into this queue at the destination
	// instead of an exchange; MaxMoves: count each message's moves and
	// leave one that has moved this often where it is (links.EngineMove).
	// Only a global destination's flows (OriginDestination) have them: the
	// configuration cannot say them and the admin API refuses them.
	DestQueue string `json:"dest_queue,omitempty" yaml:"-"`
	MaxMoves  int    `json:"max_moves,omitempty" yaml:"-"`

	Durable bool `json:"durable" yaml:"durable"`
	// Ack is qpid-route's --ack: settle the source in batches of N, a
	// disposition after at most N deliveries or a short delay (see
	// docs/delivery.md).
	Ack    int  `json:"ack" yaml:"ack"`
	Credit int  `json:"credit" yaml:"credit"` // in-flight window (messages)
	Push   bool `json:"push" yaml:"push"`     // push (-s) vs pull: who owns the route among routers
	Cost   int  `json:"cost" yaml:"cost"`     // link cost for the topology

	// NoPath is the corrective action when the destination cannot be
	// reached: steps such as ["hold 10m", "dead-letter"] (pathpolicy.Parse).
	// Empty: the router's default (hold).
	NoPath []string `json:"no_path,omitempty" yaml:"no_path"`

	OnReject        RejectPolicy `json:"on_reject" yaml:"on_reject"`
	DeadLetterQueue string       `json:"dead_letter_queue,omitempty" yaml:"dead_letter_queue"`
	// OutcomeTimeout bounds the wait for the destination's outcome; past it
	// the message is handled as unroutable (OnReject).
	OutcomeTimeout time.Duration `json:"-" yaml:"-"`

	// Force, in a request to add a route (the CLI's --force), lets a
	// multi-hop route name a destination no link-state advertisement
	// has named since the router started (Network.Known): the route
	// waits for it. Part of the request only: never kept with the route.
	Force bool `json:"force,omitempty" yaml:"-"`
}

// WithDefaults returns s with zero options set to their defaults.
func (s Spec) WithDefaults() Spec {
	if s.Credit == 0 {
		s.Credit = DefaultCredit
	}
	if s.Cost == 0 {
		s.Cost = DefaultCost
	}
	if s.OnReject == "" {
		s.OnReject = RejectAtSource
	}
	if s.OutcomeTimeout == 0 {
		s.OutcomeTimeout = DefaultOutcomeTimeout
	}
	return s
}

// Identity is what makes two routes the same route (qpid-route's
// "Duplicate route"): kind, brokers, exchange and queue or key.
func (s Spec) Identity() string {
	last := s.Queue
	if s.Kind == KindExchange {
		last = s.Key
	}
	parts := []string{string(s.Kind), s.Dest, s.Src, s.Exchange, last}
	if s.DestQueue != "" { // appended only when set: older routes keep their ids
		parts = append(parts, "queue="+s.DestQueue)
	}
	return strings.Join(parts, "\x00")
}

// ID is a short stable identifier of the route's identity, used in the
// admin API and to name its broker-side subscription.
func (s Spec) ID() string {
	sum := sha256.Sum256([]byte(s.Identity()))
	return hex.EncodeToString(sum[:6])
}

// DestNode is the destination exchange name.
func (s Spec) DestNode() string {
	if s.Kind == KindExchange && s.DestExchange != "" {
		return s.DestExchange
	}
	return s.Exchange
}

// String renders the route like qpid-route's route map.
//
// A broker given as an address with credentials (an API request naming
// "user:pass@host:port") is shown redacted: the string goes to logs.
func (s Spec) String() string {
	src, dest := redact.Address(s.Src), redact.Address(s.Dest)
	switch s.Kind {
	case KindQueue:
		if s.DestQueue != "" {
			return fmt.Sprintf("%s(queue=%s) <= %s(queue=%s) moves<=%d", dest, s.DestQueue, src, s.Queue, s.MaxMoves)
		}
		return fmt.Sprintf("%s(ex=%s) <= %s(queue=%s)", dest, s.Exchange, src, s.Queue)
	case KindDynamic:
		return fmt.Sprintf("%s(ex=%s) <= %s(ex=%s) dynamic", dest, s.Exchange, src, s.Exchange)
	}
	return fmt.Sprintf("%s(ex=%s) <= %s(ex=%s key=%s)", dest, s.DestNode(), src, s.Exchange, s.Key)
}

// specJSON is Spec on the wire: outcome_timeout as a Go duration string
// ("30s"), which operators read and write more easily than nanoseconds.
type specJSON struct {
	specAlias
	OutcomeTimeout string `json:"outcome_timeout,omitempty"`
}

type specAlias Spec // without Spec's JSON methods

// MarshalJSON writes outcome_timeout as a duration string.
func (s Spec) MarshalJSON() ([]byte, error) {
	j := specJSON{specAlias: specAlias(s)}
	if s.OutcomeTimeout != 0 {
		j.OutcomeTimeout = s.OutcomeTimeout.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads outcome_timeout as a duration string and refuses
// unknown fields (a misspelt option must not be silently ignored).
func (s *Spec) UnmarshalJSON(b []byte) error {
	var j specJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) { // name the field as the client wrote it
			te.Field = strings.TrimPrefix(te.Field, "specAlias.")
		}
		return err
	}
	*s = Spec(j.specAlias)
	s.OutcomeTimeout = 0
	if j.OutcomeTimeout != "" {
		d, err := time.ParseDuration(j.OutcomeTimeout)
		if err != nil {
			return fmt.Errorf("outcome_timeout %q: want a duration such as 30s", j.OutcomeTimeout)
		}
		s.OutcomeTimeout = d
	}
	return nil
}
