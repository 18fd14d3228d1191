package globaldest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/internal/golden"
)

// The core's golden tests: testdata/*.txt (internal/golden). `go test
// ./globaldest -run TestCoreScripts -update` rewrites them.
//
//	entry orders.* brokers=b1,b2 [confirm=30s] [idle=2m] [delete_nonempty] [props=durable,x-max-length=100] [follow [max_hops=2] [settle=5s]]
//	list b1 at=5s | orders.a configured m=0 c=1 durable x-max-length=100 | orders.b auto
//	fail b1 at=5s        the listing of b1 failed
//	... refuse           (on list, tick) the broker refuses the creates and deletes asked
//	remote at=5s b9:q.a:2 b8:q.a:0   consumers other routers advertise
//	others at=5s shared=b2 b2:q.a:1  flows other routers advertise at this router's brokers
//	tick at=40s
//	status               the destinations as `destination list` shows them
func TestCoreScripts(t *testing.T) {
	golden.RunDir(t, "testdata", func(t *testing.T) golden.Runner { return (&harness{}).run })
}

func TestCoreScriptsRoundTrip(t *testing.T) { golden.CheckRoundTrip(t, "testdata") }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type harness struct {
	entries []Entry
	c       *Core
}

func (h *harness) run(line string) (string, error) {
	segs := strings.Split(line, " | ")
	cmd, kv, words := golden.Args(segs[0])
	if cmd == "entry" {
		return "", h.entry(kv, words)
	}
	if h.c == nil {
		h.c = New(h.entries)
	}
	at := t0
	if kv["at"] != "" {
		d, err := time.ParseDuration(kv["at"])
		if err != nil {
			return "", err
		}
		at = t0.Add(d)
	}
	var acts []Action
	defer func() { // the broker does what it is asked, unless refused
		for _, a := range acts {
			var err error
			if slices.Contains(words, "refuse") {
				err = errors.New("refused")
			}
			h.c.Result(a, err)
		}
	}()
	switch cmd {
	case "list":
		var qs []Queue
		for _, seg := range segs[1:] {
			q, err := parseQueue(seg)
			if err != nil {
				return "", err
			}
			qs = append(qs, q)
		}
		acts = h.c.Observe(words[0], qs, at)
	case "fail":
		h.c.Failed(words[0], at)
	case "remote":
		rc, err := parseCounts(cmd, words)
		if err != nil {
			return "", err
		}
		h.c.Remote(rc, at)
	case "others":
		flows, err := parseCounts(cmd, words)
		if err != nil {
			return "", err
		}
		o := Others{Flows: flows, Shared: map[string]bool{}}
		for _, b := range strings.Split(kv["shared"], ",") {
			o.Shared[b] = b != ""
		}
		h.c.Others(o, at)
	case "tick":
		acts = h.c.Tick(at)
	case "status":
		b, err := json.Marshal(h.c.Status())
		if err != nil {
			return "", err
		}
		return strings.ReplaceAll(string(b), `},{"name"`, "},\n{\"name\""), nil
	default:
		return "", fmt.Errorf("unknown command %q", cmd)
	}
	if len(acts) == 0 {
		return "ok", nil
	}
	lines := make([]string, len(acts))
	for i, a := range acts {
		lines[i] = a.String()
	}
	return strings.Join(lines, "\n"), nil
}

// parseCounts reads broker:queue:count words (remote, others).
func parseCounts(cmd string, words []string) (map[string]map[string]int, error) {
	out := map[string]map[string]int{}
	for _, w := range words {
		b, rest, _ := strings.Cut(w, ":")
		i := strings.LastIndex(rest, ":")
		if i < 0 {
			return nil, fmt.Errorf("%s %q: want broker:queue:count", cmd, w)
		}
		name, n := rest[:i], rest[i+1:]
		count, err := strconv.Atoi(n)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", cmd, w, err)
		}
		if out[b] == nil {
			out[b] = map[string]int{}
		}
		out[b][name] = count
	}
	return out, nil
}

func (h *harness) entry(kv map[string]string, words []string) error {
	e := Entry{Pattern: words[0], Brokers: strings.Split(kv["brokers"], ","), ConfirmDelete: 30 * time.Second, Idle: 2 * time.Minute,
		MaxHops: 2, Settle: 5 * time.Second}
	if kv["max_hops"] != "" {
		n, err := strconv.Atoi(kv["max_hops"])
		if err != nil {
			return err
		}
		e.MaxHops = n
	}
	for key, dst := range map[string]*time.Duration{"confirm": &e.ConfirmDelete, "idle": &e.Idle, "settle": &e.Settle} {
		if kv[key] != "" {
			d, err := time.ParseDuration(kv[key])
			if err != nil {
				return err
			}
			*dst = d
		}
	}
	for _, w := range words[1:] {
		switch w {
		case "delete_nonempty":
			e.DeleteNonEmpty = true
		case "follow":
			e.Follow = true
		}
	}
	if kv["props"] != "" {
		p, err := parseProps(strings.Split(kv["props"], ","))
		if err != nil {
			return err
		}
		e.Props = &p
	}
	h.entries = append(h.entries, e)
	return nil
}

// parseQueue reads "name kind [m=N] [c=N] [durable] [x-arg=json]...".
func parseQueue(seg string) (Queue, error) {
	f := strings.Fields(seg)
	if len(f) < 2 {
		return Queue{}, fmt.Errorf("queue %q: want name and kind", seg)
	}
	q := Queue{Name: f[0]}
	switch f[1] {
	case "configured":
		q.Kind = Configured
	case "auto":
		q.Kind = AutoCreated
	case "temporary":
		q.Kind = Temporary
	default:
		return q, fmt.Errorf("kind %q", f[1])
	}
	var rest []string
	for _, w := range f[2:] {
		k, v, _ := strings.Cut(w, "=")
		var err error
		switch k {
		case "m":
			q.Messages, err = strconv.Atoi(v)
		case "c":
			q.Consumers, err = strconv.Atoi(v)
		default:
			rest = append(rest, w)
		}
		if err != nil {
			return q, err
		}
	}
	var err error
	q.Props, err = parseProps(rest)
	return q, err
}

func parseProps(words []string) (Props, error) {
	p := Props{Args: map[string]any{}}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if k == "durable" {
			p.Durable = true
			continue
		}
		if !ok {
			return p, fmt.Errorf("property %q", w)
		}
		var val any
		if err := json.Unmarshal([]byte(v), &val); err != nil {
			return p, fmt.Errorf("property %q: %w", w, err)
		}
		p.Args[k] = val
	}
	return p.Normalize()
}
