package routespec

import "time"

// Origin says where a route came from, which decides whether it survives a
// restart and whether the API may delete it.
type Origin string

const (
	OriginConfig  Origin = "config"  // the configuration file: durable, not deletable at runtime
	OriginRuntime Origin = "runtime" // added through the API/CLI: durable ones go to the state file
	// OriginDestination: a global destination's flow, moving its messages
	// to the consumers (docs/destinations.md); started and stopped by the
	// router, never stored, not deletable through the API.
	OriginDestination Origin = "destination"
)

// State is a route's or link's state, with qpid-route's names.
type State string

const (
	StateWaiting     State = "Waiting"     // a broker is unreachable or the route waits to retry
	StateConnecting  State = "Connecting"  // attaching its links
	StateOperational State = "Operational" // forwarding
	// StateStalled: attached, holding messages (at its source or in
	// flight) and forwarding none for stall_after (stall.go).
	StateStalled State = "Stalled"
	StateFailed  State = "Failed" // cannot run (poison message, missing exchange, ...); retried slowly
	StateClosed  State = "Closed" // deleted or the router is stopping
)

// Counters are a route's message counts since the router started.
type Counters struct {
	Sent        uint64 `json:"sent"`        // sent to the destination (a redelivered message counts again)
	Forwarded   uint64 `json:"forwarded"`   // accepted by the destination, settled at the source
	Redelivered uint64 `json:"redelivered"` // released back to the source (destination released)
	// Lost: the source sent them pre-settled (it keeps no copy: the
	// Proton C broker does) and the destination did not take them —
	// released, not redelivered. Always 0 on a source that waits for
	// settlement.
	Lost         uint64 `json:"lost"`
	Rejected     uint64 `json:"rejected"`      // rejected at the source (policy reject)
	DeadLettered uint64 `json:"dead_lettered"` // sent to the dead-letter queue (policy dead-letter)
	NoOutcome    uint64 `json:"no_outcome"`    // destination gave no outcome within outcome_timeout
	Looped       uint64 `json:"looped"`        // not sent: the destination was in its trace, or (exchange routes on a mesh) the link is not on its origin's tree, or a fan-out copy arrived
	NoPath       uint64 `json:"no_path"`       // dead-lettered or rejected because the destination was unreachable
	Rerouted     uint64 `json:"rerouted"`      // sent over an alternative path while the direct link was down
	Copies       uint64 `json:"copies"`        // exchange routes with fan-out: copies sent, one per broker reached
	// CopiesViaTransit: of Copies, those sent through the source's
	// transit queues (the others went straight to a broker of this router).
	CopiesViaTransit uint64 `json:"copies_via_transit"`
	InFlight         int64  `json:"in_flight"` // sent to the destination, outcome pending
	// Moved and Parked (a global destination's flow): messages moved to
	// the destination's instance at Dest, and messages left at the source
	// because they had moved max_moves times.
	Moved  uint64 `json:"moved,omitempty"`
	Parked uint64 `json:"parked,omitempty"`
}

// Status is what the admin API and `route list` show for a route.
type Status struct {
	ID          string    `json:"id"`
	Spec        Spec      `json:"spec"`
	Origin      Origin    `json:"origin"`
	State       State     `json:"state"`
	Since       time.Time `json:"since"`
	Detail      string    `json:"detail,omitempty"` // what the route waits for in its state
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	RetryIn     string    `json:"retry_in,omitempty"`
	Demand      []string  `json:"demand,omitempty"` // dynamic routes: the bindings followed at the source
	// DemandSource says how a dynamic route follows demand: binding events
	// or polling.
	DemandSource string `json:"demand_source,omitempty"`
	// Holder is, in a router cluster, the member that holds the route's
	// lease ("" while nobody does), and Epoch the lease's epoch.
	Holder string `json:"holder,omitempty"`
	Epoch  int64  `json:"epoch,omitempty"`
	Counters
}

// LinkStatus is a link: the pair of broker connections that routes from
// Src to Dest run over (qpid-route's `link list`).
type LinkStatus struct {
	Src       string `json:"src"`
	Dest      string `json:"dest"`
	State     State  `json:"state"` // Operational only while both ends are
	LastError string `json:"last_error,omitempty"`
	Routes    int    `json:"routes"`
	// Via lists the brokers between, for a destination this router is not
	// attached to (multi-hop through transit).
	Via []string `json:"via,omitempty"`
	// Ingress marks a broker's ingress (Dest empty): applications' requests
	// for multi-hop delivery, taken from links.IngressQueue.
	Ingress bool `json:"ingress,omitempty"`
	// Transit lists the transit queues this router carries over the link
	// (or takes from the ingress), with their counts.
	Transit []TransitStatus `json:"transit,omitempty"`
}

// TransitStatus is one transit forwarder, for `link list` and the API.
type TransitStatus struct {
	Broker    string    `json:"broker"`         // where it takes messages from
	Dest      string    `json:"dest,omitempty"` // the destination broker of the queue ("" for the ingress)
	Via       string    `json:"via,omitempty"`  // the next hop it writes to
	Queue     string    `json:"queue"`          // the queue on Broker
	State     State     `json:"state"`          // Connecting, Operational, Waiting
	Since     time.Time `json:"since"`          // in this state since
	LastError string    `json:"last_error,omitempty"`
	DataPath  string    `json:"data_path,omitempty"` // what the last run forwarded on: engine, the one data path
	Counters
	// IngressRefused counts the ingress's refusals (nil for a transit
	// queue).
	IngressRefused *IngressRefusals `json:"ingress_refused,omitempty"`
}

// IngressRefusals are the requests an ingress refused, by reason: for one
// of the routers' own addresses, or matching no allow rule.
type IngressRefusals struct {
	RouterOwned uint64 `json:"router_owned"`
	NotAllowed  uint64 `json:"not_allowed"`
}
