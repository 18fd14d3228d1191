package pathpolicy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/internal/golden"
)

// The path policy's golden tests: testdata/*.txt, scripts of commands
// and the decisions they must produce (internal/golden).
// `go test ./routes/pathpolicy -run TestPolicyScripts -update` rewrites them.
//
//	policy src=A dest=B mode=direct|transit|fanout steps=hold:10s,dead-letter table=on|off grace=10s dlq=Q
//	    a new route's policy, started at t=0 (steps: "," between steps,
//	    ":" before a step's duration)
//	observe t=5s src=up|down[:State] dest=up|down[:State] table=path|nopath
//	    what the route sees at t; prints the decision and the no-path clock
func TestPolicyScripts(t *testing.T) {
	golden.RunDir(t, "testdata", func(t *testing.T) golden.Runner {
		return (&policyHarness{}).run
	})
}

func TestPolicyScriptsRoundTrip(t *testing.T) {
	golden.CheckRoundTrip(t, "testdata")
}

var policyT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type policyHarness struct {
	p  *Policy
	st State
}

func (h *policyHarness) run(line string) (string, error) {
	cmd, kv, words := golden.Args(line)
	if len(words) > 0 {
		return "", fmt.Errorf("unexpected words %q", words)
	}
	switch cmd {
	case "policy":
		return "", h.policy(kv)
	case "observe":
		return h.observe(kv)
	}
	return "", fmt.Errorf("unknown command %q", cmd)
}

func (h *policyHarness) policy(kv map[string]string) error {
	p := Policy{Src: kv["src"], Dest: kv["dest"], Table: kv["table"] == "on", Started: policyT0, DeadLetterQueue: kv["dlq"]}
	switch kv["mode"] {
	case "direct", "":
		p.Mode = Direct
	case "transit":
		p.Mode = Transit
	case "fanout":
		p.Mode = Fanout
	default:
		return fmt.Errorf("mode %q", kv["mode"])
	}
	if g := kv["grace"]; g != "" {
		d, err := time.ParseDuration(g)
		if err != nil {
			return err
		}
		p.Grace = d
	}
	if s := kv["steps"]; s != "" {
		var raw []string
		for _, step := range strings.Split(s, ",") {
			raw = append(raw, strings.ReplaceAll(step, ":", " "))
		}
		steps, err := Parse(raw)
		if err != nil {
			return err
		}
		p.Steps = steps
	}
	h.p, h.st = &p, State{}
	return nil
}

// state reads "up", "down" or "down:State".
func state(s, what string) (up bool, name string, err error) {
	word, name, _ := strings.Cut(s, ":")
	switch word {
	case "up":
		return true, "Operational", nil
	case "down", "":
		if name == "" {
			name = "Waiting"
		}
		return false, name, nil
	}
	return false, "", fmt.Errorf("%s=%q: want up, down or down:State", what, s)
}

func (h *policyHarness) observe(kv map[string]string) (string, error) {
	if h.p == nil {
		return "", fmt.Errorf("observe before policy")
	}
	at, err := time.ParseDuration(kv["t"])
	if err != nil {
		return "", fmt.Errorf("t=%q: %w", kv["t"], err)
	}
	var obs Obs
	if obs.SrcUp, obs.SrcState, err = state(kv["src"], "src"); err != nil {
		return "", err
	}
	if obs.DestUp, obs.DestState, err = state(kv["dest"], "dest"); err != nil {
		return "", err
	}
	switch kv["table"] {
	case "path":
		obs.TablePath = true
	case "nopath", "":
	default:
		return "", fmt.Errorf("table=%q: want path or nopath", kv["table"])
	}
	now := policyT0.Add(at)
	d, st := Decide(*h.p, obs, h.st, now)
	h.st = st
	return formatDecision(d, st), nil
}

func formatDecision(d Decision, st State) string {
	var b strings.Builder
	b.WriteString(d.Action.String())
	if d.Action == ActForward {
		b.WriteString(" " + d.Path.String())
	}
	if d.Timer > 0 {
		fmt.Fprintf(&b, " timer=%s", d.Timer)
	}
	if d.Report != "" {
		fmt.Fprintf(&b, " report=%s", d.Report)
	}
	if !st.Lost.IsZero() {
		fmt.Fprintf(&b, " lost-since=%s", st.Lost.Sub(policyT0))
	}
	if d.Detail != "" {
		b.WriteString("\n  " + d.Detail)
	}
	return b.String()
}

// Decide is deterministic and the same for equal inputs: the watcher of a
// run relies on it to see whether a decision changed.
func TestDecideDeterministic(t *testing.T) {
	p := Policy{Src: "a", Dest: "b", Steps: []Step{{Action: StepHold, For: time.Minute}, {Action: StepReject}}, Started: policyT0}
	obs := Obs{SrcUp: true, DestState: "Waiting"}
	d1, s1 := Decide(p, obs, State{}, policyT0.Add(time.Second))
	d2, s2 := Decide(p, obs, State{}, policyT0.Add(time.Second))
	if d1 != d2 || s1 != s2 {
		t.Fatalf("%+v %+v / %+v %+v", d1, s1, d2, s2)
	}
	if !d1.Same(d2) || d1.Same(Decision{Action: ActReject}) {
		t.Fatal("Same")
	}
}
