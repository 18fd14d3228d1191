package globaldest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Props are a queue's properties as a broker declares them: durable, and
// its x- arguments (max length, message TTL, ...). Argument values are
// kept in their JSON form (numbers as float64), which is how a broker's
// management API gives them back, so that a queue the routers declared
// compares equal to the one they listed.
type Props struct {
	Durable bool
	Args    map[string]any
}

// Normalize returns p with its arguments in JSON form: what a listing
// gives back for them.
func (p Props) Normalize() (Props, error) {
	if len(p.Args) == 0 {
		return Props{Durable: p.Durable}, nil
	}
	b, err := json.Marshal(p.Args)
	if err != nil {
		return Props{}, fmt.Errorf("globaldest: arguments: %w", err)
	}
	var args map[string]any
	if err := json.Unmarshal(b, &args); err != nil {
		return Props{}, fmt.Errorf("globaldest: arguments: %w", err)
	}
	return Props{Durable: p.Durable, Args: args}, nil
}

// Equal says whether two (normalized) property sets are the same.
func (p Props) Equal(q Props) bool { return p.String() == q.String() }

// String is the properties in one canonical line: durable=true
// x-max-length=100 (arguments sorted by name).
func (p Props) String() string {
	parts := []string{fmt.Sprintf("durable=%t", p.Durable)}
	keys := make([]string, 0, len(p.Args))
	for k := range p.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := json.Marshal(p.Args[k])
		if err != nil {
			v = []byte(fmt.Sprintf("%q", fmt.Sprint(p.Args[k])))
		}
		parts = append(parts, k+"="+string(v))
	}
	return strings.Join(parts, " ")
}
