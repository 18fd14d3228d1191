package router

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/routes"
)

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
	// Admin is the admin API listener (CLI, metrics, health).
	Admin AdminSpec `yaml:"admin"`
	// Topology is the link-state flooding between routers.
	Topology TopologySpec `yaml:"topology"`
	// StateFile keeps durable routes added at runtime. Relative paths are
	// taken from the configuration file's directory.
	StateFile string `yaml:"state_file"`
	// Links are federation links this router holds besides its routes'
	// own: broker pairs, both ways, that carry multi-hop transit (a mesh).
	Links []LinkSpec `yaml:"links"`

	file  string         // path the config came from, for messages
	lines map[string]int // "brokers[i]" → line, for validation messages
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

// AdminSpec is the admin API listener.
type AdminSpec struct {
	// Listen is host:port; "" or "off" disables the API. Default
	// 127.0.0.1:9595 (loopback only).
	Listen string `yaml:"listen"`
	// Token, when set, is required as "Authorization: Bearer TOKEN".
	Token     string `yaml:"token"`
	TokenFile string `yaml:"token_file"`
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

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (e.g. 2s, 1m)", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// DefaultConfig returns the defaults every field falls back to.
func DefaultConfig() Config {
	b := famqp.DefaultBackoff()
	return Config{
		Reconnect: ReconnectSpec{Min: Duration(b.Min), Max: Duration(b.Max), ConnectTimeout: Duration(10 * time.Second)},
		Log:       LogSpec{Level: "info", Format: "text"},
		Admin:     AdminSpec{Listen: DefaultAdminListen},
		Topology: TopologySpec{Refresh: Duration(30 * time.Second), MaxAge: Duration(90 * time.Second),
			ControlAddress: DefaultControlAddress, DestinationIdle: Duration(2 * time.Minute), MaxHops: routes.DefaultMaxHops},
	}
}

// ConfigError lists every problem found in a configuration file, each as
// "file:line: what".
type ConfigError struct {
	File     string
	Problems []string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("config %s: %d problem(s):\n  %s", e.File, len(e.Problems), strings.Join(e.Problems, "\n  "))
}

// LoadConfig reads, decodes and validates a configuration file.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseConfig(path, data)
}

var (
	yamlLine    = regexp.MustCompile(`line (\d+): `)
	yamlUnknown = regexp.MustCompile(`field (\S+) not found in type \S+`)
)

// ParseConfig decodes and validates data; file names it in messages.
func ParseConfig(file string, data []byte) (*Config, error) {
	cfg := DefaultConfig()
	cfg.file = file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true) // unknown keys are errors
	var problems []string
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		problems = yamlProblems(file, err)
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			// A syntax error: nothing else can be trusted.
			return nil, &ConfigError{File: file, Problems: problems}
		}
		// Type errors and unknown keys: decoding went on; report them
		// together with the validation problems.
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err == nil {
		cfg.lines = itemLines(&root)
	}
	problems = append(problems, cfg.validate()...)
	if len(problems) > 0 {
		sort.SliceStable(problems, func(i, j int) bool { return lineOf(problems[i]) < lineOf(problems[j]) })
		return nil, &ConfigError{File: file, Problems: problems}
	}
	return &cfg, nil
}

// yamlProblems turns yaml.v3's "line N: msg" errors into "file:N: msg".
func yamlProblems(file string, err error) []string {
	var te *yaml.TypeError
	msgs := []string{err.Error()}
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		m = strings.TrimPrefix(m, "yaml: ")
		m = yamlUnknown.ReplaceAllString(m, `unknown key "$1"`)
		if loc := yamlLine.FindStringSubmatchIndex(m); loc != nil {
			m = file + ":" + m[loc[2]:loc[3]] + ": " + m[loc[1]:]
		} else {
			m = file + ": " + m
		}
		out = append(out, m)
	}
	return out
}

// itemLines maps top-level keys to their lines, and "brokers[i]" and
// "routes[i]" to the line of that list item.
func itemLines(root *yaml.Node) map[string]int {
	out := map[string]int{}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return out
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if key := m.Content[i].Value; key == "brokers" || key == "routes" || key == "links" {
			for j, item := range m.Content[i+1].Content {
				out[fmt.Sprintf("%s[%d]", key, j)] = item.Line
			}
		}
		out[m.Content[i].Value] = m.Content[i].Line
	}
	return out
}

func (c *Config) at(key string) string {
	if l, ok := c.lines[key]; ok {
		return fmt.Sprintf("%s:%d", c.file, l)
	}
	return c.file
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (c *Config) validate() []string {
	var p []string
	add := func(key, format string, args ...any) {
		p = append(p, c.at(key)+": "+fmt.Sprintf(format, args...))
	}
	if c.RouterID == "" {
		add("router_id", "router_id is required")
	} else if !nameRE.MatchString(c.RouterID) {
		add("router_id", "router_id %q: use letters, digits, '.', '_' and '-'", c.RouterID)
	}
	if len(c.Brokers) == 0 {
		add("brokers", "no brokers configured")
	}
	seen := map[string]int{}
	for i, b := range c.Brokers {
		key := fmt.Sprintf("brokers[%d]", i)
		if b.Name != "" {
			if j, dup := seen[b.Name]; dup {
				add(key, "broker %q is defined twice (also at %s)", b.Name, c.at(fmt.Sprintf("brokers[%d]", j)))
			}
			seen[b.Name] = i
			if !nameRE.MatchString(b.Name) {
				add(key, "broker name %q: use letters, digits, '.', '_' and '-'", b.Name)
			}
		}
		if b.URL != "" && len(b.URLs) > 0 {
			add(key, "broker %q: give url or urls, not both", b.Name)
		}
		for _, sb := range b.Bindings {
			if sb.Exchange == "" {
				add(key, "broker %q: a binding needs an exchange", b.Name)
			}
		}
		if b.Password != "" && b.PasswordFile != "" {
			add(key, "broker %q: give password or password_file, not both", b.Name)
		}
		if b.Connections < 0 || b.Connections > MaxConnections {
			add(key, "broker %q: connections %d: want 1..%d (default 1)", b.Name, b.Connections, MaxConnections)
		}
		bc, err := b.brokerConfig(false)
		if err == nil {
			err = bc.Validate()
		}
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				add(key, "broker %q: %s", b.Name, line)
			}
		}
	}
	if c.Reconnect.Min <= 0 || c.Reconnect.Max < c.Reconnect.Min {
		add("reconnect", "reconnect: need 0 < min <= max (min %s, max %s)", time.Duration(c.Reconnect.Min), time.Duration(c.Reconnect.Max))
	}
	p = append(p, c.validateRoutes(seen)...)
	p = append(p, c.validateLinks(seen)...)
	if steps, err := routes.ParseNoPath(c.NoPath); err != nil {
		add("no_path", "%v", err)
	} else {
		for _, st := range steps {
			if st.Action == routes.NoPathDeadLetter {
				add("no_path", "no_path: dead-letter needs a route's dead_letter_queue; set it per route")
			}
			if st.Action == routes.NoPathReroute && !c.flooding() {
				add("no_path", "no_path: reroute needs link-state flooding: set topology.secret")
			}
		}
	}
	if c.Admin.Listen != "" && c.Admin.Listen != "off" {
		if _, _, err := net.SplitHostPort(c.Admin.Listen); err != nil {
			add("admin", "admin.listen %q: want host:port (or off)", c.Admin.Listen)
		}
	}
	if c.Admin.Token != "" && c.Admin.TokenFile != "" {
		add("admin", "admin: give token or token_file, not both")
	}
	p = append(p, c.validateTopology()...)
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add("log", "log.level %q: want debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		add("log", "log.format %q: want text or json", c.Log.Format)
	}
	return p
}

// validateRoutes checks each configured route and its brokers; brokers
// maps the configured broker names.
func (c *Config) validateRoutes(brokers map[string]int) []string {
	var p []string
	seen := map[string]int{}
	for i := range c.Routes {
		key := fmt.Sprintf("routes[%d]", i)
		spec := c.Routes[i].Resolved()
		add := func(format string, args ...any) {
			p = append(p, c.at(key)+": route "+spec.String()+": "+fmt.Sprintf(format, args...))
		}
		if err := spec.Validate(); err != nil {
			var se *routes.SpecError
			if errors.As(err, &se) {
				for _, pr := range se.Problems {
					add("%s", pr)
				}
			}
		}
		if _, ok := brokers[spec.Src]; spec.Src != "" && !ok {
			add("broker %q is not in brokers", spec.Src)
		}
		if _, ok := brokers[spec.Dest]; spec.Dest != "" && !ok {
			switch {
			case !c.flooding():
				add("broker %q is not in brokers (a broker this router is not attached to can be a destination only with link-state flooding: set topology.secret)", spec.Dest)
			case spec.Kind == routes.KindDynamic:
				add("broker %q is not in brokers: a dynamic route needs both brokers attached", spec.Dest)
			case !nameRE.MatchString(spec.Dest):
				add("destination broker %q: want a broker name (letters, digits, '.', '_' and '-')", spec.Dest)
			}
		}
		if steps, err := routes.ParseNoPath(spec.NoPath); err == nil && len(steps) > 0 && steps[0].Action == routes.NoPathReroute {
			switch {
			case !c.flooding():
				add("no_path reroute needs link-state flooding: set topology.secret")
			case spec.Kind == routes.KindDynamic:
				add("no_path reroute applies to queue and exchange routes (a dynamic route follows demand along shortest paths already)")
			}
		}
		if j, dup := seen[spec.Identity()]; dup {
			add("defined twice (also at %s)", c.at(fmt.Sprintf("routes[%d]", j)))
		}
		seen[spec.Identity()] = i
	}
	return p
}

// flooding says whether link-state flooding is on (a secret is given).
func (c *Config) flooding() bool { return c.Topology.Secret != "" || c.Topology.SecretFile != "" }

// validateLinks checks the configured links against the brokers.
func (c *Config) validateLinks(brokers map[string]int) []string {
	var p []string
	seen := map[[2]string]int{}
	for i, l := range c.Links {
		key := fmt.Sprintf("links[%d]", i)
		add := func(format string, args ...any) {
			p = append(p, c.at(key)+": link "+strings.Join(l.Between, "-")+": "+fmt.Sprintf(format, args...))
		}
		if !c.flooding() {
			add("links carry multi-hop transit, which needs link-state flooding: set topology.secret")
		}
		if len(l.Between) != 2 {
			add("between: want two broker names, e.g. [rabbit1, rabbit2]")
			continue
		}
		a, b := l.Between[0], l.Between[1]
		for _, n := range l.Between {
			if _, ok := brokers[n]; !ok {
				add("broker %q is not in brokers", n)
			}
		}
		if a == b {
			add("a link joins two different brokers")
		}
		if l.Cost < 0 {
			add("cost %d: want 1 or more (default 1)", l.Cost)
		}
		k := [2]string{min(a, b), max(a, b)}
		if j, dup := seen[k]; dup {
			add("defined twice (also at %s)", c.at(fmt.Sprintf("links[%d]", j)))
		}
		seen[k] = i
	}
	return p
}

// LinkPairs returns the configured links, both ways, with their costs.
func (c *Config) LinkPairs() map[[2]string]int64 {
	out := map[[2]string]int64{}
	for _, l := range c.Links {
		if len(l.Between) != 2 {
			continue
		}
		cost := int64(max(l.Cost, 1))
		out[[2]string{l.Between[0], l.Between[1]}] = cost
		out[[2]string{l.Between[1], l.Between[0]}] = cost
	}
	return out
}

func (c *Config) validateTopology() []string {
	var p []string
	add := func(format string, args ...any) {
		p = append(p, c.at("topology")+": topology: "+fmt.Sprintf(format, args...))
	}
	t := c.Topology
	if t.Secret != "" && t.SecretFile != "" {
		add("give secret or secret_file, not both")
	}
	if t.Secret != "" && len(t.Secret) < 16 {
		add("secret is %d characters; use at least 16", len(t.Secret))
	}
	if t.Refresh <= 0 {
		add("refresh must be positive")
	}
	if t.MaxAge < 2*t.Refresh {
		add("max_age %s must be at least twice refresh %s", time.Duration(t.MaxAge), time.Duration(t.Refresh))
	}
	if t.DestinationIdle <= 0 {
		add("destination_idle must be positive")
	}
	if t.MaxHops < 1 || t.MaxHops > 255 {
		add("max_hops %d: want 1..255", t.MaxHops)
	}
	if !nameRE.MatchString(t.ControlAddress) {
		add("control_address %q: use letters, digits, '.', '_' and '-'", t.ControlAddress)
	}
	for _, peer := range t.Peers {
		if !nameRE.MatchString(peer) || peer == c.RouterID {
			add("peer %q: want another router's id", peer)
		}
	}
	return p
}

// TopologySecret returns the network secret ("" = flooding off), reading
// secret_file if set.
func (c *Config) TopologySecret() (string, error) {
	if c.Topology.SecretFile == "" {
		return c.Topology.Secret, nil
	}
	b, err := os.ReadFile(c.Topology.SecretFile)
	if err != nil {
		return "", fmt.Errorf("config: topology.secret_file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Resolved returns the route's Spec with the file's outcome_timeout and
// the defaults applied.
func (r RouteSpec) Resolved() routes.Spec {
	s := r.Spec
	s.OutcomeTimeout = time.Duration(r.OutcomeTimeout)
	return s.WithDefaults()
}

// RouteSpecs returns every configured route, resolved.
func (c *Config) RouteSpecs() []routes.Spec {
	out := make([]routes.Spec, 0, len(c.Routes))
	for _, r := range c.Routes {
		out = append(out, r.Resolved())
	}
	return out
}

// DefaultNoPath returns the router-wide no-path chain (validated).
func (c *Config) DefaultNoPath() []routes.NoPathStep {
	steps, _ := routes.ParseNoPath(c.NoPath)
	return steps
}

// StatePath is the state file's path: state_file, relative to the config
// file's directory, default fedrouter-<router_id>.routes.json there.
func (c *Config) StatePath() string {
	p := c.StateFile
	if p == "" {
		p = "fedrouter-" + c.RouterID + ".routes.json"
	}
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(c.file), p)
}

// AdminToken returns the admin token, reading token_file if set.
func (c *Config) AdminToken() (string, error) {
	if c.Admin.TokenFile == "" {
		return c.Admin.Token, nil
	}
	b, err := os.ReadFile(c.Admin.TokenFile)
	if err != nil {
		return "", fmt.Errorf("config: admin.token_file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

func lineOf(problem string) int {
	var n int
	if i := strings.Index(problem, ":"); i >= 0 {
		fmt.Sscanf(problem[i+1:], "%d", &n)
	}
	return n
}

// brokerConfig converts the file's form into the amqp layer's. readFiles
// loads password_file: the daemon needs it, check-config does not (it may
// run where the secrets are not readable).
func (b BrokerSpec) brokerConfig(readFiles bool) (famqp.BrokerConfig, error) {
	urls := b.URLs
	if b.URL != "" {
		urls = []string{b.URL}
	}
	bc := famqp.BrokerConfig{
		Name: b.Name, URLs: urls, Profile: b.Profile, Username: b.Username, Password: b.Password,
		SASL: b.SASL, VHost: b.VHost,
		TLS: famqp.TLSConfig{CAFile: b.TLS.CAFile, CertFile: b.TLS.CertFile, KeyFile: b.TLS.KeyFile,
			ServerName: b.TLS.ServerName, InsecureSkipVerify: b.TLS.InsecureSkipVerify},
		Management: famqp.ManagementConfig{URL: b.Management.URL, Username: b.Management.Username, Password: b.Management.Password},
	}
	if readFiles && b.PasswordFile != "" {
		pw, err := os.ReadFile(b.PasswordFile)
		if err != nil {
			return bc, fmt.Errorf("password_file: %w", err)
		}
		bc.Password = strings.TrimRight(string(pw), "\r\n")
	}
	return bc, nil
}

// BrokerConfigs returns the amqp-layer configuration of every broker.
func (c *Config) BrokerConfigs() ([]famqp.BrokerConfig, error) {
	out := make([]famqp.BrokerConfig, 0, len(c.Brokers))
	for i, b := range c.Brokers {
		bc, err := b.brokerConfig(true)
		if err != nil {
			return nil, fmt.Errorf("%s: broker %q: %w", c.at(fmt.Sprintf("brokers[%d]", i)), b.Name, err)
		}
		out = append(out, bc)
	}
	return out, nil
}

// StaticDemand returns each broker's declared bindings: broker →
// exchange → keys (brokers without any are left out).
func (c *Config) StaticDemand() map[string]map[string][]string {
	out := map[string]map[string][]string{}
	for _, b := range c.Brokers {
		for _, sb := range b.Bindings {
			if out[b.Name] == nil {
				out[b.Name] = map[string][]string{}
			}
			out[b.Name][sb.Exchange] = append(out[b.Name][sb.Exchange], sb.Key)
		}
	}
	return out
}

// Backoff returns the configured reconnect backoff.
func (c *Config) Backoff() famqp.Backoff {
	b := famqp.DefaultBackoff()
	b.Min, b.Max = time.Duration(c.Reconnect.Min), time.Duration(c.Reconnect.Max)
	return b
}
