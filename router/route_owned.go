package router

import (
	"fmt"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes"
)

// refuseOwned refuses a route added at runtime that names one of the
// routers' own nodes — fedrouter.* (transit, ingress, dead-letter, fan-out
// queues) or the control address and its inboxes — as the ingress does
// (links.RouterOwned): a route reading fedrouter.transit.* would take
// messages in transit, one writing the control exchange would publish
// into the routers' control plane. Configured routes are the operator's.
func refuseOwned(spec routes.Spec, control string) error {
	var problems []string
	for _, f := range []struct{ field, name string }{
		{"exchange", spec.Exchange}, {"queue", spec.Queue}, {"dest_exchange", spec.DestExchange}, {"dest_queue", spec.DestQueue},
	} {
		if f.name != "" && links.RouterOwned(amqp.Node{Name: f.name}, control) {
			problems = append(problems, fmt.Sprintf("%s %q is one of the routers' own nodes (%s*, %s): a route may neither read nor write it", f.field, f.name, links.RouterOwnedPrefix, control))
		}
	}
	if problems != nil {
		return &routes.SpecError{Problems: problems}
	}
	return nil
}
