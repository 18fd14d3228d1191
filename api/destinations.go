package api

import "github.com/fedrouter/fedrouter/globaldest"

// Destinations is GET /api/v1/destinations: every global destination
// with its instances, and the brokers that could not be listed.
type Destinations struct {
	Destinations []globaldest.Status `json:"destinations"`
	Unlisted     map[string]string   `json:"unlisted,omitempty"` // broker → why its last listing failed
	Counts       DestCounts          `json:"counts"`
}

// DestCounts are the global destinations' actions carried out since the
// router started.
type DestCounts struct {
	Created uint64 `json:"created"`
	Deleted uint64 `json:"deleted"`
	Kept    uint64 `json:"kept"` // deletes refused: the queue held messages
	Failed  uint64 `json:"failed"`
	// FlowsStarted, FlowsStopped: messages following consumers.
	FlowsStarted uint64 `json:"flows_started"`
	FlowsStopped uint64 `json:"flows_stopped"`
	// Moved: messages moved by the flows; Parked: messages a flow left
	// where they were, having moved max_hops times (a message parked at
	// each of several laps counts each time).
	Moved  uint64 `json:"moved"`
	Parked uint64 `json:"parked"`
	// LimitRefusals: messages the instances of limited destinations
	// refused the routes (released at their sources, not lost).
	LimitRefusals uint64 `json:"limit_refusals"`
	// SharesRefused: other routers' advertised shares refused (malformed,
	// out of bounds, naming brokers they are not attached to).
	SharesRefused uint64 `json:"shares_refused"`
}
