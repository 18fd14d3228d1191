package amqp

import (
	"context"
	"fmt"
	"sort"
)

// ExchangeDemand reads, through QMF, the bindings of qpidd's exchange to
// queues: the demand a dynamic route with this broker as its destination
// follows (polled: qpidd publishes no binding events fedrouter reads).
// qpidd has no exchange-to-exchange bindings to divert through.
func (p *qpidProfile) ExchangeDemand(ctx context.Context, exchange string, divert bool) ([]DemandBinding, error) {
	if divert {
		return nil, fmt.Errorf("divert bindings on qpidd (exchange %q): %w", exchange, ErrUnsupported)
	}
	bs, err := p.mgmt.Objects(ctx, "binding")
	if err != nil {
		return nil, fmt.Errorf("bindings of exchange %q: %w", exchange, err)
	}
	seen := map[string]bool{}
	var out []DemandBinding
	for _, b := range bs {
		if b.RefName("exchangeRef") != exchange {
			continue
		}
		d := DemandBinding{Key: b.String("bindingKey"), Origins: originsOf(qmfArgs(b["arguments"]))}
		if !seen[d.ID()] {
			seen[d.ID()] = true
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out, nil
}

// qmfArgs is a QMF arguments map with its byte-string values as strings
// (QMF gives strings as binary).
func qmfArgs(v any) map[string]any {
	in, _ := v.(map[string]any)
	out := make(map[string]any, len(in))
	for k, x := range in {
		if b, ok := x.([]byte); ok {
			x = string(b)
		}
		out[k] = x
	}
	return out
}
