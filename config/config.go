// Package config reads and checks fedrouter's configuration file (YAML):
// every problem at once, each as file:line, with secrets kept in files
// where the operator wants them. A route's own rules are routes.Spec.Check,
// the one place they are written; this package adds the file's rules
// (brokers, links, topology, admin, log) and the router's network to them.
// router/ runs what it returns; the CLI's check-config prints its errors.
package config

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

// DefaultControlAddress is the control node's name on every broker.
const DefaultControlAddress = "fedrouter.control"

// Config is the router's configuration file (YAML). Defaults are set in
// DefaultConfig and documented in docs/configuration.md.
type Config struct {
	// RouterID names this router in the federation; unique per router.
	RouterID string `yaml:"router_id"`
	// Brokers the router connects to, by name.
	Brokers []BrokerSpec `yaml:"brokers"`
	// Reconnect tunes the backoff of every broker connection.
	Reconnect ReconnectSpec `yaml:"reconnect"`
	// Log sets the log level and format.
	Log LogSpec `yaml:"log"`
	// Routes are the configured routes: restored on every start.
	Routes []RouteSpec `yaml:"routes"`
	// NoPath is the corrective action of routes without their own
	// no_path: steps such as ["hold 10m", "reject"]. Default: hold.
	NoPath []string `yaml:"no_path"`
	// StallAfter: a route attached and holding messages (at its source or
	// in flight) that forwards none for this long is Stalled, and its
	// links are re-attached once (docs/configuration.md). Default 60s.
	StallAfter Duration `yaml:"stall_after"`
	// Admin is the admin API listener (CLI, metrics, health).
	Admin AdminSpec `yaml:"admin"`
	// Metrics shapes the admin API's /metrics.
	Metrics MetricsSpec `yaml:"metrics"`
	// Topology is the link-state flooding between routers.
	Topology TopologySpec `yaml:"topology"`
	// StateFile keeps durable routes added at runtime. Relative paths are
	// taken from the configuration file's directory.
	StateFile string `yaml:"state_file"`
	// Links are federation links this router holds besides its routes'
	// own: broker pairs, both ways, that carry multi-hop transit (a mesh).
	Links []LinkSpec `yaml:"links"`
	// Ingress is applications' multi-hop requests through
	// fedrouter.ingress (ingress.go): off unless enabled, then only what
	// its allow list names.
	Ingress IngressSpec `yaml:"ingress"`
	// Cluster, when present, makes this router a member of a router
	// cluster (cluster.go, docs/cluster.md): routes live in the store and
	// are shared; absent, the router is single, with its state file.
	Cluster *ClusterSpec `yaml:"cluster"`
	// DataPath is what routes forward on: engine, the only data path
	// ("" too; go-amqp was removed and is refused with a reason:
	// routes.CheckDataPath; docs/engine.md).
	DataPath string `yaml:"data_path"`
	// Destinations are global destinations (destinations.go,
	// docs/destinations.md): queues kept alike at every broker of a span.
	Destinations []DestinationSpec `yaml:"destinations"`

	file   string            // path the config came from, for messages
	lines  map[string]int    // "brokers[i]" → line, for validation messages
	noPath []pathpolicy.Step // NoPath, parsed by validate
	mode   Mode              // how the files named are judged (LoadFor)
	notes  []string          // what ModeCheck could not judge (files.go)
}

// BrokerSpec is one broker as written in the file.
type BrokerSpec struct {
	Name     string   `yaml:"name"`
	URL      string   `yaml:"url"`  // one URL, or
	URLs     []string `yaml:"urls"` // a failover list
	Profile  string   `yaml:"profile"`
	Username string   `yaml:"username"`
	Password string   `yaml:"password"`
	// PasswordFile: read the password from a file (kept out of the config).
	PasswordFile string  `yaml:"password_file"`
	SASL         string  `yaml:"sasl"`
	TLS          TLSSpec `yaml:"tls"`
	Management   struct {
		URL      string `yaml:"url"`
		Username string `yaml:"username"`
		Password string `yaml:"password"`
	} `yaml:"management"`
	VHost string `yaml:"vhost"`
	// Bindings declare the broker's demand for dynamic routes to it, when
	// its profile cannot tell (e.g. proton, generic): exchange and key.
	Bindings []StaticBinding `yaml:"bindings"`
	// Connections: AMQP connections to this broker (default 1, at most
	// 16); routes are spread over them, round robin.
	Connections int `yaml:"connections"`
	// RequireTLS refuses plain amqp:// URLs for this broker.
	RequireTLS bool `yaml:"require_tls"`
}

// StaticBinding is one declared binding of a broker.
type StaticBinding struct {
	Exchange string `yaml:"exchange"`
	Key      string `yaml:"key"`
}

// LinkSpec is one configured link: two of the router's brokers, joined
// both ways, at a cost (default 1).
type LinkSpec struct {
	Between []string `yaml:"between"`
	Cost    int      `yaml:"cost"`
}

// TLSSpec is a broker's TLS settings (used with amqps:// URLs).
type TLSSpec struct {
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// ReconnectSpec is the reconnect backoff.
type ReconnectSpec struct {
	Min            Duration `yaml:"min"`
	Max            Duration `yaml:"max"`
	ConnectTimeout Duration `yaml:"connect_timeout"`
}

// RouteSpec is a route as written in the file: the routes.Spec fields
// plus a duration-typed outcome_timeout.
type RouteSpec struct {
	routes.Spec `yaml:",inline"`
	// OutcomeTimeout is here, not in routes.Spec, to be a YAML duration.
	OutcomeTimeout Duration `yaml:"outcome_timeout"`
}

// AdminSpec is the admin API listener. Its rules are in admin.go.
type AdminSpec struct {
	// Listen is host:port; "" or "off" disables the API. Default
	// 127.0.0.1:9595 (loopback only).
	Listen string `yaml:"listen"`
	// Token is required as "Authorization: Bearer TOKEN" (at least
	// MinAdminTokenLen bytes). Without token or token_file the router
	// generates one (GeneratedTokenPath), on a loopback listen only.
	Token     string `yaml:"token"`
	TokenFile string `yaml:"token_file"`
	// Names are the host names clients may reach the API by (the Host
	// header), besides IP addresses, localhost and the listen host: a
	// name not listed is refused, which stops DNS rebinding.
	Names []string `yaml:"names"`
	// TLS serves the API over HTTPS with this certificate and key.
	TLS AdminTLSSpec `yaml:"tls"`
	// AllowPlaintext lets a non-loopback listen go without TLS (behind a
	// TLS-terminating proxy, on a trusted network).
	AllowPlaintext bool `yaml:"allow_plaintext"`
}

// MetricsSpec shapes /metrics.
type MetricsSpec struct {
	// RouteSeries: how many routes are exported with series of their own
	// (twelve each); every route is in the per-pair and per-state
	// aggregates. Default DefaultRouteSeries; 0: none.
	RouteSeries int `yaml:"route_series"`
}

// DefaultRouteSeries is metrics.route_series's default: 500 routes of
// twelve series keep a scrape near half a megabyte.
const DefaultRouteSeries = 500

// AdminTLSSpec is the admin API's server certificate (PEM files).
type AdminTLSSpec struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// TopologySpec configures link-state flooding. Without a secret flooding
// is off: unsigned advertisements are never sent nor accepted.
type TopologySpec struct {
	Secret     string `yaml:"secret"`      // the network secret (HMAC-SHA256 key), or
	SecretFile string `yaml:"secret_file"` // a file holding it
	// Refresh: how often the router re-advertises; default 30s.
	Refresh Duration `yaml:"refresh"`
	// MaxAge: a router not heard from for this long is dropped with its
	// links; default 90s, at least 2 × refresh.
	MaxAge Duration `yaml:"max_age"`
	// ControlAddress is the control node on every broker.
	ControlAddress string `yaml:"control_address"`
	// DestinationIdle: an auto-created destination with no consumers and
	// no messages for this long is no longer advertised. Default 2m.
	DestinationIdle Duration `yaml:"destination_idle"`
	// MaxHops bounds a message's transit hops (multi-hop delivery); a
	// message past it is dead-lettered. Default 16.
	MaxHops int `yaml:"max_hops"`
	// Peers are router ids whose inboxes this router publishes to on
	// queue-only brokers (where there is no broadcast). Routers heard on
	// multicast brokers are added by themselves.
	Peers []string `yaml:"peers"`
}

// MaxConnections bounds brokers[].connections.
const MaxConnections = 16

// Connections returns how many connections to hold to each broker.
func (c *Config) Connections() map[string]int {
	out := map[string]int{}
	for _, b := range c.Brokers {
		out[b.Name] = max(1, b.Connections)
	}
	return out
}

// DefaultAdminListen is where the admin API listens unless configured.
const DefaultAdminListen = "127.0.0.1:9595"

// LogSpec sets logging.
type LogSpec struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// Duration is a time.Duration written as "2s", "1m30s".
type Duration time.Duration

// UnmarshalYAML parses a Go duration string. Its refusal is a
// *yaml.TypeError: the decoder goes on with the other keys, so a bad value
// does not hide the file's other problems.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not a duration (e.g. 2s, 1m)", n.Line, s)}}
	}
	*d = Duration(v)
	return nil
}

// DefaultConfig returns the defaults every field falls back to.
func DefaultConfig() Config {
	b := amqp.DefaultBackoff()
	return Config{
		Reconnect:  ReconnectSpec{Min: Duration(b.Min), Max: Duration(b.Max), ConnectTimeout: Duration(10 * time.Second)},
		Log:        LogSpec{Level: "info", Format: "text"},
		Admin:      AdminSpec{Listen: DefaultAdminListen},
		Metrics:    MetricsSpec{RouteSeries: DefaultRouteSeries},
		StallAfter: Duration(routes.DefaultStallAfter),
		Topology: TopologySpec{Refresh: Duration(30 * time.Second), MaxAge: Duration(90 * time.Second),
			ControlAddress: DefaultControlAddress, DestinationIdle: Duration(2 * time.Minute), MaxHops: links.DefaultMaxHops},
	}
}
