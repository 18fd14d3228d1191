package router

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"time"

	"github.com/fedrouter/fedrouter/api"
)

// ErrNotClustered: the router is single (no cluster: section).
var ErrNotClustered = errors.New("router: this router is not a cluster member (no cluster: section in its configuration)")

// Cluster returns the cluster's status as this member sees it.
func (r *Router) Cluster(context.Context) (api.ClusterStatus, error) {
	c := r.cluster
	if c == nil {
		return api.ClusterStatus{}, ErrNotClustered
	}
	out := api.ClusterStatus{Name: r.cfg.Cluster.Name, Self: c.params.Self, Heartbeat: c.params.Heartbeat.String(), Lease: c.params.Lease.String(), Members: []api.MemberStatus{}}
	st, err := c.store()
	if err != nil || st == nil {
		return out, nil
	}
	view, met, _ := c.member.Status()
	out.Joined, out.ReadAt = !view.Now.IsZero(), view.Now
	out.Metrics = api.ClusterCounters{Held: met.Held, Takeovers: met.Takeovers, StoreErrors: met.StoreErrors,
		LastRenewal: met.LastRenewal.Round(time.Microsecond).String()}
	held, epochs := map[string]int{}, map[string]int64{}
	for _, rt := range view.Routes {
		if rt.Held(view.Now) {
			held[rt.Owner]++
			epochs[rt.Owner] = max(epochs[rt.Owner], rt.Epoch)
		}
	}
	for _, m := range view.Members {
		out.Members = append(out.Members, api.MemberStatus{ID: m.ID, State: string(c.params.State(m, view.Now)), LastBeat: m.LastBeat,
			BeatAgo: view.Now.Sub(m.LastBeat).Round(time.Millisecond).String(), AdminURL: m.AdminURL, Brokers: nonNil(m.Brokers), Local: m.Local,
			Routes: held[m.ID], MaxEpoch: epochs[m.ID], Incarnate: m.Incarnation})
	}
	sort.Slice(out.Members, func(i, j int) bool { return out.Members[i].ID < out.Members[j].ID })
	return out, nil
}

// clusterStatus serves GET /api/v1/cluster.
func (a *AdminServer) clusterStatus(w http.ResponseWriter, r *http.Request) {
	serveView(w, func() (api.ClusterStatus, error) { return a.svc.Cluster(r.Context()) })
}

// serveView answers a view: as JSON, or the Service's error (a view the
// router does not have is a 404 with code off).
func serveView[T any](w http.ResponseWriter, get func() (T, error)) {
	v, err := get()
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
