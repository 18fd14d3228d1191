package api

import "time"

// ClusterStatus is GET /api/v1/cluster (`fedrouter cluster status`): the
// members as this member last read them from the store, and its own
// lease counters.
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
	ID        string    `json:"id"`
	State     string    `json:"state"` // alive, suspect, failed or left (cluster.MemberState)
	LastBeat  time.Time `json:"last_beat"`
	BeatAgo   string    `json:"beat_ago"`
	AdminURL  string    `json:"admin_url,omitempty"`
	Brokers   []string  `json:"brokers"`
	Local     []string  `json:"local,omitempty"`
	Routes    int       `json:"routes"`    // leases held
	MaxEpoch  int64     `json:"max_epoch"` // the highest epoch among them
	Incarnate string    `json:"incarnation"`
}

// ClusterCounters are this member's lease counters.
type ClusterCounters struct {
	Held        int    `json:"routes_held"`
	Takeovers   uint64 `json:"takeovers"`
	StoreErrors uint64 `json:"store_errors"`
	LastRenewal string `json:"last_renewal"` // the last heartbeat's round trip, a Go duration string
}
