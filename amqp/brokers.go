package amqp

// Broker is one configured broker as the router's layers use it: its
// connections and its profile.
type Broker struct {
	Conn *Conn
	// Pool, when it holds more than Conn, are further connections to the
	// same broker: routes are spread over Conn and Pool (each route's
	// links on one of them), so that many routes do not share one
	// connection's reader and writer (docs/performance.md). Conn is
	// Pool[0] then.
	Pool    []*Conn
	Profile Profile
	// StaticDemand declares the broker's bindings (exchange → keys) for
	// dynamic routes to it, when its profile cannot tell them.
	StaticDemand map[string][]string
}
