package router

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fedrouter/fedrouter/globaldest"
)

// The global destinations' metrics (docs/destinations.md); a router with
// no destinations: section exports none of them. Per-instance series are
// bounded like the routes' (metrics.route_series destinations, by name);
// the counts and the per-state gauge cover every destination.
var (
	descDestinations = prometheus.NewDesc("fedrouter_destinations",
		"Global destinations by state (global, local, deleting, deleted).", []string{"state"}, nil)
	descDestActions = prometheus.NewDesc("fedrouter_destination_actions_total",
		"What the router did for the global destinations since it started: created, deleted, kept (a delete refused: the queue held messages or had a consumer), failed, flow_started, flow_stopped.",
		[]string{"action"}, nil)
	descDestMoved = prometheus.NewDesc("fedrouter_destination_flow_messages_total",
		"Messages the flows handled since the router started: moved (to an instance with consumers), parked (left where they were: moved max_hops times already).",
		[]string{"outcome"}, nil)
	descDestFlows = prometheus.NewDesc("fedrouter_destination_flows",
		"Flows now: pairs of brokers between which a global destination's messages move.", nil, nil)
	descDestUnlisted = prometheus.NewDesc("fedrouter_destination_brokers_unlisted",
		"Brokers of the spans whose last queue listing failed (nothing is concluded from them).", nil, nil)
	descDestDepth = prometheus.NewDesc("fedrouter_destination_messages",
		"Messages in a global destination's instance at a broker, as the broker's last listing said.", []string{"destination", "broker"}, nil)
	descDestConsumers = prometheus.NewDesc("fedrouter_destination_consumers",
		"Consumers of a global destination's instance at a broker, as the broker's last listing said.", []string{"destination", "broker"}, nil)
	descDestLimitTotal = prometheus.NewDesc("fedrouter_destination_limit_total",
		"A limited global destination's messages (unit=messages) or bytes (unit=bytes) over all its instances, as the last listings said.", []string{"destination", "unit"}, nil)
	descDestLimit = prometheus.NewDesc("fedrouter_destination_limit",
		"A global destination's limit over all its instances (unit=messages, bytes).", []string{"destination", "unit"}, nil)
	descDestRefusals = prometheus.NewDesc("fedrouter_destination_limit_refusals_total",
		"Messages the instances of limited global destinations refused the routes since the router started (released at their sources, not lost).", nil, nil)
	descDestSharesRefused = prometheus.NewDesc("fedrouter_destination_shares_refused_total",
		"Other routers' advertised shares of limited destinations refused since the router started (malformed, out of bounds, brokers they are not attached to).", nil, nil)
	descDestDisagree = prometheus.NewDesc("fedrouter_destination_limits_disagree",
		"Limited destinations whose routers configure different limits (the smallest hold).", nil, nil)
	descDestOmitted = prometheus.NewDesc("fedrouter_destination_series_omitted",
		"Global destinations without series of their own (past metrics.route_series).", nil, nil)
)

var destDescs = []*prometheus.Desc{descDestinations, descDestActions, descDestMoved, descDestFlows, descDestUnlisted,
	descDestDepth, descDestConsumers, descDestOmitted, descDestLimitTotal, descDestLimit, descDestRefusals, descDestSharesRefused, descDestDisagree}

// collectDestinations exports the global destinations, when svc has them.
func (c serviceCollector) collectDestinations(ch chan<- prometheus.Metric) {
	st, err := c.svc.GlobalDestinations(context.WithoutCancel(c.ctx))
	if err != nil {
		return // none configured
	}
	states := map[string]int{"global": 0, "local": 0, "deleting": 0, "deleted": 0}
	flows, disagree := 0, 0
	for i, d := range st.Destinations {
		states[d.State]++
		if d.Limits != nil && d.Limits.Differs != "" {
			disagree++
		}
		flows += len(d.Flows)
		if i >= c.routeSeries {
			continue
		}
		collectLimits(ch, d)
		for _, in := range d.Instances {
			if in.State == "present" || in.State == "deleting" {
				ch <- constMetric(descDestDepth, prometheus.GaugeValue, float64(in.Messages), d.Name, in.Broker)
				ch <- constMetric(descDestConsumers, prometheus.GaugeValue, float64(in.Consumers), d.Name, in.Broker)
			}
		}
	}
	for state, n := range states {
		ch <- constMetric(descDestinations, prometheus.GaugeValue, float64(n), state)
	}
	n := st.Counts
	for action, v := range map[string]uint64{"created": n.Created, "deleted": n.Deleted, "kept": n.Kept, "failed": n.Failed,
		"flow_started": n.FlowsStarted, "flow_stopped": n.FlowsStopped} {
		ch <- constMetric(descDestActions, prometheus.CounterValue, float64(v), action)
	}
	ch <- constMetric(descDestMoved, prometheus.CounterValue, float64(n.Moved), "moved")
	ch <- constMetric(descDestMoved, prometheus.CounterValue, float64(n.Parked), "parked")
	ch <- constMetric(descDestFlows, prometheus.GaugeValue, float64(flows))
	ch <- constMetric(descDestUnlisted, prometheus.GaugeValue, float64(len(st.Unlisted)))
	ch <- constMetric(descDestRefusals, prometheus.CounterValue, float64(n.LimitRefusals))
	ch <- constMetric(descDestSharesRefused, prometheus.CounterValue, float64(n.SharesRefused))
	ch <- constMetric(descDestDisagree, prometheus.GaugeValue, float64(disagree))
	ch <- constMetric(descDestOmitted, prometheus.GaugeValue, float64(max(0, len(st.Destinations)-c.routeSeries)))
}

// collectLimits exports d's limits and its totals, when it has limits.
func collectLimits(ch chan<- prometheus.Metric, d globaldest.Status) {
	l := d.Limits
	if l == nil {
		return
	}
	var msgs, bytes int64
	for _, b := range l.Brokers {
		msgs += b.ShareMessages
		bytes += b.ShareBytes
	}
	for unit, v := range map[string][2]int64{"messages": {msgs, l.Messages}, "bytes": {bytes, l.Bytes}} {
		if v[0] > 0 { // the shares add up to the limit
			ch <- constMetric(descDestLimit, prometheus.GaugeValue, float64(v[0]), d.Name, unit)
			ch <- constMetric(descDestLimitTotal, prometheus.GaugeValue, float64(v[1]), d.Name, unit)
		}
	}
}
