package topology

import "fmt"

// validate checks what a router may advertise. Everything that reaches the
// graph passes here, so Compute never sees a bad edge and a peer cannot make
// a router hold unbounded data.
func (l LSA) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrMalformed, l.Router, fmt.Sprintf(format, args...))
	}
	if err := checkName("router id", l.Router, MaxNameLen); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if l.Instance <= 0 || l.Seq == 0 || l.Time <= 0 {
		return bad("instance %d, seq %d and time %d must be > 0", l.Instance, l.Seq, l.Time)
	}
	if len(l.Brokers) > MaxBrokers || len(l.Links) > MaxLinks || len(l.Ext) > MaxExt {
		return bad("%d brokers, %d links, %d extensions: the limits are %d, %d, %d",
			len(l.Brokers), len(l.Links), len(l.Ext), MaxBrokers, MaxLinks, MaxExt)
	}
	if err := checkLocal(l.Brokers, l.Links); err != nil {
		return bad("%v", err)
	}
	for k := range l.Ext {
		if err := checkName("extension", k, MaxNameLen); err != nil {
			return bad("%v", err)
		}
	}
	return nil
}

// checkLocal checks a router's attachments and links: also what SetLocal
// takes, so a router never originates an LSA its peers would reject.
func checkLocal(brokers []BrokerState, links []Link) error {
	seen := make(map[string]bool, len(brokers))
	for _, b := range brokers {
		if err := checkName("broker", b.Name, MaxNameLen); err != nil {
			return err
		}
		if err := checkName("broker state", b.State, MaxStateLen); err != nil {
			return fmt.Errorf("broker %s: %w", b.Name, err)
		}
		if seen[b.Name] {
			return fmt.Errorf("broker %s listed twice", b.Name)
		}
		seen[b.Name] = true
	}
	for _, k := range links {
		// A router holds links only between brokers it is attached to.
		if !seen[k.From] || !seen[k.To] || k.From == k.To {
			return fmt.Errorf("link %q→%q: both ends must be distinct attached brokers", k.From, k.To)
		}
		if k.Cost <= 0 || k.Cost > MaxCost {
			return fmt.Errorf("link %s→%s: cost %d not in 1..%d", k.From, k.To, k.Cost, MaxCost)
		}
	}
	return nil
}

// checkName accepts what the configuration accepts for router ids and
// broker names: a letter or digit, then letters, digits, '.', '_', '-'.
func checkName(what, s string, max int) error {
	if s == "" || len(s) > max {
		return fmt.Errorf("%s %q: want 1 to %d characters", what, s, max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return fmt.Errorf("%s %q: use letters, digits, '.', '_' and '-'", what, s)
		}
	}
	return nil
}
