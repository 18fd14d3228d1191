package globaldest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/internal/golden"
)

// The shares' golden tests: testdata/shares/*.txt. `go test ./globaldest
// -run TestSharesScripts -update` rewrites them.
//
//	limits max_messages=10000 [max_bytes=N] [overflow=drop-head]
//	use at=5s | b1 m=10 [b=300] [c=1] | b2 ...     the instances now: the decision
func TestSharesScripts(t *testing.T) {
	golden.RunDir(t, "testdata/shares", func(t *testing.T) golden.Runner { return (&sharesHarness{}).run })
}

func TestSharesScriptsRoundTrip(t *testing.T) { golden.CheckRoundTrip(t, "testdata/shares") }

type sharesHarness struct {
	lim  Limits
	prev Shares
}

func (h *sharesHarness) run(line string) (string, error) {
	segs := strings.Split(line, " | ")
	cmd, kv, _ := golden.Args(segs[0])
	switch cmd {
	case "limits":
		h.lim = Limits{Overflow: RejectPublish}
		for k, v := range kv {
			var err error
			switch k {
			case "max_messages":
				h.lim.MaxMessages, err = strconv.ParseInt(v, 10, 64)
			case "max_bytes":
				h.lim.MaxBytes, err = strconv.ParseInt(v, 10, 64)
			case "overflow":
				h.lim.Overflow = v
			default:
				err = fmt.Errorf("unknown limit %q", k)
			}
			if err != nil {
				return "", err
			}
		}
		return h.lim.String(), nil
	case "use":
		d, err := time.ParseDuration(kv["at"])
		if err != nil {
			return "", err
		}
		var use []Use
		for _, seg := range segs[1:] {
			u, err := parseUse(seg)
			if err != nil {
				return "", err
			}
			use = append(use, u)
		}
		dec := Decide(h.lim, use, h.prev, t0.Add(d))
		h.prev = dec.Shares
		return formatDecision(dec), nil
	}
	return "", fmt.Errorf("unknown command %q", cmd)
}

// parseUse reads "broker [m=N] [b=N] [c=N]".
func parseUse(seg string) (Use, error) {
	f := strings.Fields(seg)
	if len(f) == 0 {
		return Use{}, fmt.Errorf("use %q: want a broker", seg)
	}
	u := Use{Broker: f[0]}
	for _, w := range f[1:] {
		k, v, _ := strings.Cut(w, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return u, fmt.Errorf("use %q: %w", w, err)
		}
		switch k {
		case "m":
			u.Messages = n
		case "b":
			u.Bytes = n
		case "c":
			u.Consumers = int(n)
		default:
			return u, fmt.Errorf("use %q: want m=, b= or c=", w)
		}
	}
	return u, nil
}

func formatDecision(d Decision) string {
	var lines []string
	share := func(what string, m map[string]int64) {
		if m == nil {
			return
		}
		var parts []string
		var sum int64
		for _, b := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, fmt.Sprintf("%s=%d", b, m[b]))
			sum += m[b]
		}
		lines = append(lines, fmt.Sprintf("%s %s (sum %d)", what, strings.Join(parts, " "), sum))
	}
	share("messages", d.Shares.Messages)
	share("bytes", d.Shares.Bytes)
	if d.Changed {
		lines = append(lines, "changed: "+d.Why)
	}
	if d.Withhold {
		lines = append(lines, "withhold: the total is at the limit")
	}
	if len(d.Full) > 0 {
		lines = append(lines, "full: "+strings.Join(d.Full, ","))
	}
	return strings.Join(lines, "\n")
}
