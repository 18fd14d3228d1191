package router

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A cluster member's metrics; a single router exports none of them.
var (
	descClusterHeld = prometheus.NewDesc("fedrouter_cluster_routes_held",
		"Routes whose lease this member holds.", nil, nil)
	descClusterTakeovers = prometheus.NewDesc("fedrouter_cluster_takeovers_total",
		"Leases this member took over from a member whose lease had expired.", nil, nil)
	descClusterStoreErrors = prometheus.NewDesc("fedrouter_cluster_store_errors_total",
		"Store calls of this member that failed.", nil, nil)
	descClusterRenewal = prometheus.NewDesc("fedrouter_cluster_lease_renewal_seconds",
		"The last heartbeat's round trip (member row and every lease renewed).", nil, nil)
	descClusterMembers = prometheus.NewDesc("fedrouter_cluster_members",
		"The cluster's members by state, as this member last read them.", []string{"state"}, nil)
)

var clusterDescs = []*prometheus.Desc{descClusterHeld, descClusterTakeovers, descClusterStoreErrors, descClusterRenewal, descClusterMembers}

// collectCluster exports the member's counters, when svc is a member.
func (c serviceCollector) collectCluster(ch chan<- prometheus.Metric) {
	st, err := c.svc.Cluster(context.WithoutCancel(c.ctx))
	if err != nil {
		return // not a member
	}
	m := st.Metrics
	ch <- constMetric(descClusterHeld, prometheus.GaugeValue, float64(m.Held))
	ch <- constMetric(descClusterTakeovers, prometheus.CounterValue, float64(m.Takeovers))
	ch <- constMetric(descClusterStoreErrors, prometheus.CounterValue, float64(m.StoreErrors))
	renewal, _ := time.ParseDuration(m.LastRenewal) // the router's own text: always a duration
	ch <- constMetric(descClusterRenewal, prometheus.GaugeValue, renewal.Seconds())
	count := map[string]int{}
	for _, mem := range st.Members {
		count[string(mem.State)]++
	}
	for _, state := range []string{"alive", "suspect", "failed", "left"} {
		ch <- constMetric(descClusterMembers, prometheus.GaugeValue, float64(count[state]), state)
	}
}
