package routespec

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/fedrouter/fedrouter/internal/redact"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

// SpecError lists what is wrong with a route.
type SpecError struct {
	Problems []string
}

func (e *SpecError) Error() string {
	return "routes: invalid route: " + strings.Join(e.Problems, "; ")
}

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
		add("source and destination are the same broker %q: a route from a broker to itself is refused", redact.Address(s.Dest))
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
	} else if s.OutcomeTimeout <= ConnIdleTimeout {
		add("outcome_timeout %s must be longer than the connection idle timeout %s: a silent network must end as a lost connection (the source redelivers), not as unroutable messages",
			s.OutcomeTimeout, ConnIdleTimeout)
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
