package router

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/routes"
)

// Metric names and labels; docs/admin-api.md lists them.
var (
	routeLabels   = []string{"route", "dest", "src"}
	outcomeLabels = []string{"route", "dest", "src", "outcome"}

	descRouteMessages = prometheus.NewDesc("fedrouter_route_messages_total",
		"Messages a route handled since the router started, by outcome: forwarded (accepted by the destination), redelivered (released back to the source), rejected (at the source), dead_lettered, no_outcome (destination silent past outcome_timeout), looped (not sent: already there, or not on its origin's tree), no_path (dead-lettered or rejected for want of a path), rerouted (sent over an alternative path), copies (exchange routes with fan-out: copies sent into transit, one per broker reached), lost (sent pre-settled by the source, which keeps no copy, and not taken by the destination).",
		outcomeLabels, nil)
	descTransitMessages = prometheus.NewDesc("fedrouter_transit_messages_total",
		"Messages a transit forwarder (multi-hop) or a broker's ingress handled, by outcome: forwarded, redelivered, dead_lettered (bad request, missing address, too many hops), lost (sent pre-settled by the broker and not taken). dest is \"\" for the ingress.",
		[]string{"broker", "dest", "via", "outcome"}, nil)
	descIngressRefused = prometheus.NewDesc("fedrouter_ingress_refused_total",
		"Requests a broker's ingress refused (dead-lettered with amqp:unauthorized-access), by reason: router_owned (one of the routers' own addresses), not_allowed (no ingress.allow rule matches).",
		[]string{"broker", "reason"}, nil)
	descTransitUp = prometheus.NewDesc("fedrouter_transit_up",
		"1 while the transit forwarder (or ingress) is Operational, else 0.", []string{"broker", "dest", "via"}, nil)
	descRouteInFlight = prometheus.NewDesc("fedrouter_route_in_flight",
		"Messages sent to the destination whose outcome is pending.", routeLabels, nil)
	descRouteUp = prometheus.NewDesc("fedrouter_route_up",
		"1 while the route is Operational (forwarding), else 0.", routeLabels, nil)
	descRouteStalled = prometheus.NewDesc("fedrouter_route_stalled",
		"1 while the route is Stalled (attached, holding messages at its source or in flight, and forwarding none for stall_after), else 0.", routeLabels, nil)
	descBrokerUp = prometheus.NewDesc("fedrouter_broker_up",
		"1 while the broker connection is Operational, else 0.", []string{"broker"}, nil)
	descBrokerAttempts = prometheus.NewDesc("fedrouter_broker_reconnect_attempts",
		"Failed connection attempts since the broker connection last succeeded.", []string{"broker"}, nil)
	descTopoRouters = prometheus.NewDesc("fedrouter_topology_routers",
		"Routers whose link-state advertisement this router holds, itself included.", nil, nil)
	descTopoLinks = prometheus.NewDesc("fedrouter_topology_links",
		"Links advertised in the federation graph, by state.", []string{"state"}, nil)
	descTopoLSAs = prometheus.NewDesc("fedrouter_topology_lsa_total",
		"Link-state advertisements handled, by what became of them (accepted, stale, duplicate, version, malformed, too_large, unsigned, bad_signature, too_old, future, replayed, expired, originated, reflooded).",
		[]string{"outcome"}, nil)
	descRoutes = prometheus.NewDesc("fedrouter_routes",
		"Routes by state (Waiting, Connecting, Operational, Stalled, Failed, Closed): every route, whether it has series of its own or not.", []string{"state"}, nil)
	descPairMessages = prometheus.NewDesc("fedrouter_routes_messages_total",
		"Messages every route from src to dest handled since the router started, by outcome (as fedrouter_route_messages_total, summed per broker pair over all routes).",
		[]string{"dest", "src", "outcome"}, nil)
	descPairInFlight = prometheus.NewDesc("fedrouter_routes_in_flight",
		"Messages sent to dest by the routes from src whose outcome is pending, summed over all routes.", []string{"dest", "src"}, nil)
	descSeriesOmitted = prometheus.NewDesc("fedrouter_route_series_omitted",
		"Routes without series of their own (fedrouter_route_*): past metrics.route_series; the fedrouter_routes* aggregates count them.", nil, nil)
	descControlDropped = prometheus.NewDesc("fedrouter_control_dropped_total",
		"Control messages dropped by the transport before the link-state core saw them, by reason: too_large, malformed, unsigned, bad_signature, version (refused by the check before queueing), inbox_full (no free slot for their router), coalesced (an advertisement of their router at least as new was waiting), outbox_full (not sent: the broker's queue was full).",
		[]string{"reason"}, nil)
)

// topologyScrapeTimeout bounds the wait for the topology driver in a scrape.
const topologyScrapeTimeout = 2 * time.Second

// DefaultRouteSeries is how many routes get series of their own in
// /metrics by default (metrics.route_series).
const DefaultRouteSeries = config.DefaultRouteSeries

// serviceCollector turns the Service's route and broker status into
// metrics at scrape time: the routes already count, so nothing is counted
// twice and a deleted route simply stops being exported.
//
// ctx is the admin server owner's: Collect is given no context, so the
// scrape's call into the Service derives from it. routeSeries bounds the
// routes exported one by one (AdminOptions.RouteSeries); every route is
// in the per-pair and per-state aggregates.
type serviceCollector struct {
	ctx         context.Context
	svc         Service
	routeSeries int
}

func newServiceCollector(ctx context.Context, svc Service, routeSeries int) prometheus.Collector {
	return serviceCollector{ctx: ctx, svc: svc, routeSeries: routeSeries}
}

func (c serviceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRoutes, descPairMessages, descPairInFlight, descSeriesOmitted,
		descRouteMessages, descRouteInFlight, descRouteUp, descRouteStalled, descBrokerUp, descBrokerAttempts,
		descTopoRouters, descTopoLinks, descTopoLSAs, descControlDropped, descTransitMessages, descTransitUp, descIngressRefused} {
		ch <- d
	}
	for _, d := range clusterDescs {
		ch <- d
	}
	for _, d := range destDescs {
		ch <- d
	}
}

func (c serviceCollector) Collect(ch chan<- prometheus.Metric) {
	c.collectRoutes(ch, c.svc.OwnRoutes())
	for _, st := range c.svc.Brokers() {
		ch <- constMetric(descBrokerUp, prometheus.GaugeValue, boolValue(st.State == amqp.Operational), st.Broker)
		ch <- constMetric(descBrokerAttempts, prometheus.GaugeValue, float64(st.Attempt), st.Broker)
	}
	for _, l := range c.svc.Links() {
		for _, t := range l.Transit {
			labels := []string{t.Broker, t.Dest, t.Via}
			for name, n := range map[string]uint64{"forwarded": t.Forwarded, "redelivered": t.Redelivered, "dead_lettered": t.DeadLettered, "lost": t.Lost} {
				ch <- constMetric(descTransitMessages, prometheus.CounterValue, float64(n), append(labels, name)...)
			}
			ch <- constMetric(descTransitUp, prometheus.GaugeValue, boolValue(t.State == routes.StateOperational), labels...)
			if r := t.IngressRefused; r != nil {
				ch <- constMetric(descIngressRefused, prometheus.CounterValue, float64(r.RouterOwned), t.Broker, "router_owned")
				ch <- constMetric(descIngressRefused, prometheus.CounterValue, float64(r.NotAllowed), t.Broker, "not_allowed")
			}
		}
	}
	c.collectTopology(ch)
	c.collectCluster(ch)
	c.collectDestinations(ch)
}

// collectTopology exports the link-state view; nothing when flooding is
// off (or the driver does not answer in time).
func (c serviceCollector) collectTopology(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(c.ctx, topologyScrapeTimeout)
	defer cancel()
	snap, err := c.svc.Topology(ctx)
	if err != nil {
		return
	}
	ch <- constMetric(descTopoRouters, prometheus.GaugeValue, float64(len(snap.Routers)))
	links := map[string]int{"up": 0, "down": 0, "broker-down": 0}
	for _, l := range snap.Links {
		links[l.State]++
	}
	for state, n := range links {
		ch <- constMetric(descTopoLinks, prometheus.GaugeValue, float64(n), state)
	}
	k := snap.Counters
	for name, n := range map[string]uint64{"accepted": k.Accepted, "stale": k.Stale, "duplicate": k.Duplicate,
		"version": k.Version, "malformed": k.Malformed, "too_large": k.TooLarge, "unsigned": k.Unsigned,
		"bad_signature": k.BadSignature, "too_old": k.TooOld, "future": k.Future, "replayed": k.Replayed,
		"expired": k.Expired, "originated": k.Originated, "reflooded": k.Reflooded} {
		ch <- constMetric(descTopoLSAs, prometheus.CounterValue, float64(n), name)
	}
	for reason, n := range snap.ControlDropped {
		ch <- constMetric(descControlDropped, prometheus.CounterValue, float64(n), reason)
	}
}

// collectRoutes exports every route in the aggregates, and the first
// routeSeries of them — those not Operational first, so that an alert on
// fedrouter_route_up == 0 still names them — with series of their own.
func (c serviceCollector) collectRoutes(ch chan<- prometheus.Metric, list []routes.Status) {
	states := map[routes.State]int{routes.StateWaiting: 0, routes.StateConnecting: 0, routes.StateOperational: 0, routes.StateStalled: 0, routes.StateFailed: 0, routes.StateClosed: 0}
	type pair struct{ dest, src string }
	sums := map[pair]*[len(outcomeNames)]uint64{}
	inFlight := map[pair]int64{}
	for _, st := range list {
		states[st.State]++
		p := pair{st.Spec.Dest, st.Spec.Src}
		if sums[p] == nil {
			sums[p] = new([len(outcomeNames)]uint64)
		}
		for i, n := range outcomeCounts(st) {
			sums[p][i] += n
		}
		inFlight[p] += st.InFlight
	}
	for state, n := range states {
		ch <- constMetric(descRoutes, prometheus.GaugeValue, float64(n), string(state))
	}
	for p, counts := range sums {
		for i, n := range counts {
			ch <- constMetric(descPairMessages, prometheus.CounterValue, float64(n), p.dest, p.src, outcomeNames[i])
		}
		ch <- constMetric(descPairInFlight, prometheus.GaugeValue, float64(inFlight[p]), p.dest, p.src)
	}
	own := perRoute(list, c.routeSeries)
	for _, st := range own {
		collectRoute(ch, st)
	}
	ch <- constMetric(descSeriesOmitted, prometheus.GaugeValue, float64(len(list)-len(own)))
}

// perRoute picks the routes exported one by one: at most limit (none when
// negative), those not Operational first, each group in list order.
func perRoute(list []routes.Status, limit int) []routes.Status {
	if limit <= 0 {
		return nil
	}
	if len(list) <= limit {
		return list
	}
	out := make([]routes.Status, 0, limit)
	for _, up := range []bool{false, true} {
		for _, st := range list {
			if len(out) == limit {
				return out
			}
			if (st.State == routes.StateOperational) == up {
				out = append(out, st)
			}
		}
	}
	return out
}

// outcomeNames label fedrouter_route_messages_total's outcomes, in
// outcomeCounts' order.
var outcomeNames = [...]string{"forwarded", "redelivered", "rejected", "dead_lettered", "no_outcome", "looped", "no_path", "rerouted", "copies", "lost"}

func outcomeCounts(st routes.Status) [len(outcomeNames)]uint64 {
	return [...]uint64{st.Forwarded, st.Redelivered, st.Rejected, st.DeadLettered, st.NoOutcome, st.Looped, st.NoPath, st.Rerouted, st.Copies, st.Lost}
}

func collectRoute(ch chan<- prometheus.Metric, st routes.Status) {
	labels := []string{st.ID, st.Spec.Dest, st.Spec.Src}
	for i, n := range outcomeCounts(st) {
		ch <- constMetric(descRouteMessages, prometheus.CounterValue, float64(n), append(labels, outcomeNames[i])...)
	}
	ch <- constMetric(descRouteInFlight, prometheus.GaugeValue, float64(st.InFlight), labels...)
	ch <- constMetric(descRouteUp, prometheus.GaugeValue, boolValue(st.State == routes.StateOperational), labels...)
	ch <- constMetric(descRouteStalled, prometheus.GaugeValue, boolValue(st.State == routes.StateStalled), labels...)
}

// constMetric is prometheus.NewConstMetric that reports a bad label value
// (invalid UTF-8 in a runtime route's broker) in the scrape instead of
// panicking the router.
func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
