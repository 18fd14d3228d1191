package router

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"time"

	"github.com/fedrouter/fedrouter/cluster"
)

// ClusterStatus is `fedrouter cluster status`: the members as this member
// last read them from the store, and its own lease counters.
type ClusterStatus struct {
	Name      string          `json:"name"`
	Self      string          `json:"self"`
	Heartbeat string          `json:"heartbeat"`
	Lease     string          `json:"lease"`
	ReadAt    time.Time       `json:"read_at,omitzero"` // the store's time of the last read
	Joined    bool            `json:"joined"`           // the store has answered at least once
	Members   []MemberStatus  `json:"members"`
	Metrics   ClusterCounters `json:"metrics"`
}

// MemberStatus is one member of the cluster.
type MemberStatus struct {
	ID        string              `json:"id"`
	State     cluster.MemberState `json:"state"`
	LastBeat  time.Time           `json:"last_beat"`
	BeatAgo   string              `json:"beat_ago"`
	AdminURL  string              `json:"admin_url,omitempty"`
	Brokers   []string            `json:"brokers"`
	Local     []string            `json:"local,omitempty"`
	Routes    int                 `json:"routes"`    // leases held
	MaxEpoch  int64               `json:"max_epoch"` // the highest epoch among them
	Incarnate string              `json:"incarnation"`
}

// ClusterCounters are this member's lease counters.
type ClusterCounters struct {
	Held          int     `json:"routes_held"`
	Takeovers     uint64  `json:"takeovers"`
	StoreErrors   uint64  `json:"store_errors"`
	RenewalMillis float64 `json:"last_renewal_ms"`
}

// ErrNotClustered: the router is single (no cluster: section).
var ErrNotClustered = errors.New("router: this router is not a cluster member (no cluster: section in its configuration)")

// Cluster returns the cluster's status as this member sees it.
func (r *Router) Cluster(context.Context) (ClusterStatus, error) {
	c := r.cluster
	if c == nil {
		return ClusterStatus{}, ErrNotClustered
	}
	out := ClusterStatus{Name: r.cfg.Cluster.Name, Self: c.params.Self, Heartbeat: c.params.Heartbeat.String(), Lease: c.params.Lease.String(), Members: []MemberStatus{}}
	st, err := c.store()
	if err != nil || st == nil {
		return out, nil
	}
	view, met, _ := c.member.Status()
	out.Joined, out.ReadAt = !view.Now.IsZero(), view.Now
	out.Metrics = ClusterCounters{Held: met.Held, Takeovers: met.Takeovers, StoreErrors: met.StoreErrors,
		RenewalMillis: float64(met.LastRenewal.Microseconds()) / 1000}
	held, epochs := map[string]int{}, map[string]int64{}
	for _, rt := range view.Routes {
		if rt.Held(view.Now) {
			held[rt.Owner]++
			epochs[rt.Owner] = max(epochs[rt.Owner], rt.Epoch)
		}
	}
	for _, m := range view.Members {
		out.Members = append(out.Members, MemberStatus{ID: m.ID, State: c.params.State(m, view.Now), LastBeat: m.LastBeat,
			BeatAgo: view.Now.Sub(m.LastBeat).Round(time.Millisecond).String(), AdminURL: m.AdminURL, Brokers: m.Brokers, Local: m.Local,
			Routes: held[m.ID], MaxEpoch: epochs[m.ID], Incarnate: m.Incarnation})
	}
	sort.Slice(out.Members, func(i, j int) bool { return out.Members[i].ID < out.Members[j].ID })
	return out, nil
}

// clusterService is the admin API's optional cluster view (Router has it;
// a fake Service need not).
type clusterService interface {
	Cluster(ctx context.Context) (ClusterStatus, error)
}

// clusterStatus serves GET /v1/cluster.
func (a *AdminServer) clusterStatus(w http.ResponseWriter, r *http.Request) {
	cs, ok := a.svc.(clusterService)
	serveOptional(w, r, ok, ErrNotClustered, func() (ClusterStatus, error) { return cs.Cluster(r.Context()) })
}

// serveOptional answers a view only some routers have: 404 with absent's
// words when the Service lacks it (ok false) or says absent, the view as
// JSON otherwise.
func serveOptional[T any](w http.ResponseWriter, r *http.Request, ok bool, absent error, get func() (T, error)) {
	if !ok {
		writeError(w, http.StatusNotFound, absent.Error())
		return
	}
	v, err := get()
	if errors.Is(err, absent) {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
