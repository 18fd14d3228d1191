// Package routes holds fedrouter's routes: what a route is (Spec), how it is
// named and validated, where durable runtime routes are kept (the state
// file and its journal: statefile.go, journal.go), and the Manager that
// runs each route over its two brokers' connections.
package routes

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
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
	// DefaultCredit, measured (docs/performance.md, "The hot path"): on
	// RabbitMQ a receiver must use up a grant before the next (go-amqp's
	// credit counter, docs/go-amqp-credit.md) and the broker idles ~15 ms
	// after each; 2,000 makes grants of 1,000, a quarter as many as 500
	// did: +12 % with one route, +27 % with eight. The memory it allows
	// per route is credit × message size (2,000 × 16 KiB = 32 MiB).
	DefaultCredit         = 2000
	DefaultCost           = 1
	DefaultOutcomeTimeout = 30 * time.Second
	MaxCredit             = 10000
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
	// leave one that has moved this often where it is (links.MoveSink).
	// Only a global destination's flows (OriginDestination) have them: the
	// configuration cannot say them and the admin API refuses them.
	DestQueue string `json:"dest_queue,omitempty" yaml:"-"`
	MaxMoves  int    `json:"max_moves,omitempty" yaml:"-"`

	Durable bool `json:"durable" yaml:"durable"`
	// Ack is qpid-route's --ack: settle the source in batches of N. On
	// the engine data path, a disposition after at most N deliveries or
	// a short delay; through go-amqp, which settles each delivery with
	// its own disposition, shown only (see docs/delivery.md).
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
	src, dest := amqp.Redact(s.Src), amqp.Redact(s.Dest)
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

// SpecError lists what is wrong with a route.
type SpecError struct {
	Problems []string
}

func (e *SpecError) Error() string {
	return "routes: invalid route: " + strings.Join(e.Problems, "; ")
}

// Errors of this package. ErrDuplicate's text is qpid-route's, shown as
// is: scripts written for qpid-route look for it.
var (
	//lint:ignore ST1005 qpid-route's words, which its users' scripts match
	ErrDuplicate   = errors.New("Duplicate route - ignoring")
	ErrNotFound    = errors.New("routes: no such route")
	ErrConfigRoute = errors.New("routes: route is defined in the configuration file; edit the file to remove it")
	// ErrDestinationRoute: the route is a global destination's flow; it
	// ends when the consumers move (destinations: in the configuration).
	ErrDestinationRoute = errors.New("routes: route moves a global destination's messages to its consumers and ends with them (follow_consumers in the destinations: entry)")
	ErrUnknownBroker    = errors.New("routes: unknown broker")
	ErrStopped          = errors.New("routes: manager stopped")
)

// Network is what a route's rules need to know of the router it is for.
type Network struct {
	// Flooding says whether link-state flooding is on (topology.secret):
	// remote destinations, transit and reroute need it.
	Flooding bool
	// Attached says whether the router is attached to (configures) a
	// broker.
	Attached func(broker string) bool
	// Known, when set, says whether link state has named a broker since
	// the router started: a destination the router is not attached to
	// and no advertisement ever named is most likely misspelt, and is
	// refused unless the spec has Force. Only routes added at runtime
	// are judged so (Manager.Admit): at the start, nothing is named yet.
	Known func(broker string) bool
}

// brokerName is what a broker known only from the link-state network may
// be called.
var brokerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Validate checks s (after WithDefaults) on its own, with no router in
// view: Check with the zero Network. It returns a *SpecError or nil.
func (s Spec) Validate() error {
	_, err := s.Check(Network{})
	return err
}

// Check validates s (after WithDefaults) for a router on network n — the
// one place a route's rules are written: the configuration file (config/)
// and the admin API and CLI (Manager.Normalize) call it — and returns its
// parsed no_path chain. With n.Attached nil, the rules that depend on the
// router's brokers are skipped. The error is a *SpecError listing every
// problem.
func (s Spec) Check(n Network) ([]pathpolicy.Step, error) {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	p = append(p, s.checkKind()...)
	p = append(p, s.checkLengths()...)
	if s.Dest == "" {
		add("the destination broker is missing")
	}
	if s.Src == "" {
		add("the source broker is missing")
	}
	if s.Dest != "" && s.Dest == s.Src {
		add("source and destination are the same broker %q: a route from a broker to itself is refused", amqp.Redact(s.Dest))
	}
	if s.Exchange == "" && s.DestQueue == "" {
		add("the exchange is missing")
	}
	if s.Credit < 1 || s.Credit > MaxCredit {
		add("credit %d: want 1..%d", s.Credit, MaxCredit)
	}
	if s.Ack < 0 {
		add("ack %d: want 0 or more", s.Ack)
	}
	if s.Cost < 1 {
		add("cost %d: want 1 or more", s.Cost)
	}
	steps, err := pathpolicy.Parse(s.NoPath)
	if err != nil {
		add("%v", err)
	}
	deadLetters := false
	for _, st := range steps {
		deadLetters = deadLetters || st.Action == pathpolicy.StepDeadLetter
	}
	switch s.OnReject {
	case RejectAtSource:
		if s.DeadLetterQueue != "" && !deadLetters {
			add("dead_letter_queue is set but neither on_reject nor no_path dead-letters; set on_reject: dead-letter")
		}
	case DeadLetter:
		if s.DeadLetterQueue == "" {
			add("on_reject dead-letter needs dead_letter_queue (a queue on the source broker)")
		}
	default:
		add("on_reject %q: want reject or dead-letter", s.OnReject)
	}
	if deadLetters && s.DeadLetterQueue == "" {
		add("no_path dead-letter needs dead_letter_queue (a queue on the source broker)")
	}
	if s.OutcomeTimeout <= 0 {
		add("outcome_timeout must be positive")
	} else if s.OutcomeTimeout <= amqp.DefaultIdleTimeout {
		add("outcome_timeout %s must be longer than the connection idle timeout %s: a silent network must end as a lost connection (the source redelivers), not as unroutable messages",
			s.OutcomeTimeout, amqp.DefaultIdleTimeout)
	}
	if n.Attached != nil {
		p = append(p, s.checkNetwork(n, pathpolicy.Rerouting(steps))...)
	}
	if len(p) > 0 {
		return nil, &SpecError{Problems: p}
	}
	return steps, nil
}

// checkKind is Check's rules of the route's kind.
func (s Spec) checkKind() []string {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	switch s.Kind {
	case KindQueue:
		if s.Queue == "" {
			add("a queue route needs the source queue")
		}
		if s.Key != "" || s.DestExchange != "" {
			add("a queue route takes no key or dest_exchange")
		}
		if s.DestQueue != "" && s.Exchange != "" {
			add("a queue route delivers to an exchange or to dest_queue, not both")
		}
	case KindExchange:
		if s.Queue != "" {
			add("an exchange route takes no queue (did you mean kind: queue?)")
		}
	case KindDynamic:
		if s.Queue != "" || s.Key != "" || s.DestExchange != "" {
			add("a dynamic route takes no queue, key or dest_exchange: the destination's bindings decide what crosses")
		}
	default:
		add("kind %q: want queue, exchange or dynamic", s.Kind)
	}
	if s.DivertBindings && s.Kind != KindDynamic {
		add("divert_bindings applies to dynamic routes only")
	}
	if s.DestQueue != "" && s.Kind != KindQueue {
		add("dest_queue applies to queue routes only")
	}
	if s.MaxMoves < 0 || (s.MaxMoves > 0 && s.DestQueue == "") {
		add("max_moves %d: a count of 1 or more, with dest_queue", s.MaxMoves)
	}
	return p
}

// MaxNameLen bounds every name a route carries — brokers, exchanges,
// queues, keys — in bytes: AMQP 0-9-1's short strings, the longest a
// RabbitMQ queue or exchange name can be. A longer one is refused with
// its field named, never sent to a broker.
const MaxNameLen = 255

// checkLengths is Check's rule on the length of names.
func (s Spec) checkLengths() []string {
	var p []string
	for _, f := range []struct{ name, v string }{
		{"src", s.Src}, {"dest", s.Dest}, {"exchange", s.Exchange}, {"queue", s.Queue}, {"key", s.Key},
		{"dest_exchange", s.DestExchange}, {"dead_letter_queue", s.DeadLetterQueue}, {"dest_queue", s.DestQueue},
	} {
		if len(f.v) > MaxNameLen {
			p = append(p, fmt.Sprintf("%s is %d bytes long, at most %d", f.name, len(f.v), MaxNameLen))
		}
	}
	return p
}

// checkNetwork is Check's rules that depend on the router: which brokers
// it is attached to, and whether it floods link state.
func (s Spec) checkNetwork(n Network, reroute bool) []string {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	if s.Src != "" && !n.Attached(s.Src) {
		add("broker %q is not in brokers", s.Src)
	}
	if s.Dest != "" && !n.Attached(s.Dest) {
		switch {
		case !n.Flooding:
			add("broker %q is not in brokers (a broker this router is not attached to can be a destination only with link-state flooding: set topology.secret)", s.Dest)
		case s.Kind == KindDynamic:
			add("broker %q is not in brokers: a dynamic route needs both brokers attached", s.Dest)
		case !brokerName.MatchString(s.Dest):
			add("destination broker %q: want a broker name (letters, digits, '.', '_' and '-')", s.Dest)
		case n.Known != nil && !s.Force && !n.Known(s.Dest):
			add("broker %q is not in brokers and no router has advertised it since this one started: misspelt? (to route towards it anyway, waiting until a router advertises it, add with force: --force)", s.Dest)
		}
	}
	if reroute {
		switch {
		case !n.Flooding:
			add("no_path reroute needs link-state flooding: set topology.secret")
		case s.Kind == KindDynamic:
			add("no_path reroute applies to queue and exchange routes (a dynamic route follows demand along shortest paths already)")
		}
	}
	return p
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
