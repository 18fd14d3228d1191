package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// StoreURLEnv is the environment variable a member's store URL can come
// from (neither cluster.store nor cluster.store_file set).
const StoreURLEnv = "FEDROUTER_STORE_URL"

// Cluster defaults (docs/cluster.md explains the trade-off).
const (
	DefaultHeartbeat    = 2 * time.Second
	DefaultSuspectAfter = 3
	DefaultLease        = 6 * time.Second
)

// ClusterSpec is the cluster: section: this router is a member of a router
// cluster sharing its routes through the store.
type ClusterSpec struct {
	// Name is the cluster's name: members with the same name share routes;
	// several clusters can share one database.
	Name string `yaml:"name"`
	// Store is the store's URL (postgres://user:password@host:port/db), or
	// StoreFile a file holding it, or neither and $FEDROUTER_STORE_URL.
	Store     string `yaml:"store"`
	StoreFile string `yaml:"store_file"`
	// Heartbeat is how often the member beats and renews its leases.
	Heartbeat Duration `yaml:"heartbeat"`
	// SuspectAfter: missed heartbeats after which a member is suspect.
	SuspectAfter int `yaml:"suspect_after"`
	// Lease is how long a route's lease lasts unrenewed: a failed member's
	// routes move after it (plus a heartbeat).
	Lease Duration `yaml:"lease"`
	// AdminURL is the URL the other members send clients of this member's
	// routes to; default http://<admin.listen>.
	AdminURL string `yaml:"admin_url"`
	// LocalBrokers are the brokers near this member (same site): a pull
	// route prefers a member local to its destination, a push route one
	// local to its source.
	LocalBrokers []string `yaml:"local_brokers"`
}

// withDefaults fills the zero fields.
func (s *ClusterSpec) withDefaults() {
	if s.Heartbeat == 0 {
		s.Heartbeat = Duration(DefaultHeartbeat)
	}
	if s.SuspectAfter == 0 {
		s.SuspectAfter = DefaultSuspectAfter
	}
	if s.Lease == 0 {
		s.Lease = Duration(DefaultLease)
	}
}

// validateCluster checks the cluster: section; brokers maps the
// configured broker names.
func (c *Config) validateCluster(brokers map[string]int) []string {
	s := c.Cluster
	if s == nil {
		return nil
	}
	var p []string
	add := func(format string, args ...any) {
		p = append(p, c.at("cluster")+": "+fmt.Sprintf(format, args...))
	}
	s.withDefaults()
	switch {
	case s.Name == "":
		add("cluster.name is required (members with the same name share their routes)")
	case !nameRE.MatchString(s.Name) || len(s.Name) > 63:
		add("cluster.name %q: at most 63 letters, digits, '.', '_' and '-'", s.Name)
	}
	if s.Store != "" && s.StoreFile != "" {
		add("cluster: give store or store_file, not both")
	}
	if s.Store != "" && !strings.HasPrefix(s.Store, "postgres://") && !strings.HasPrefix(s.Store, "postgresql://") {
		add("cluster.store: want a postgres:// URL (the store holds route definitions and leases; see docs/cluster.md)")
	}
	hb, lease := time.Duration(s.Heartbeat), time.Duration(s.Lease)
	if hb < 100*time.Millisecond || hb > time.Minute {
		add("cluster.heartbeat %s: want between 100ms and 1m", hb)
	}
	if s.SuspectAfter < 1 || s.SuspectAfter > 100 {
		add("cluster.suspect_after %d: want 1 to 100 missed heartbeats", s.SuspectAfter)
	}
	if lease < 2*hb {
		// A lease must survive one lost renewal, or one slow query moves
		// every route.
		add("cluster.lease %s: want at least two heartbeats (%s)", lease, 2*hb)
	}
	if s.AdminURL != "" {
		if u, err := url.Parse(s.AdminURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("cluster.admin_url %q: want http://host:port or https://host:port", s.AdminURL)
		}
	}
	for _, b := range s.LocalBrokers {
		if _, ok := brokers[b]; !ok {
			add("cluster.local_brokers: %q is not a configured broker", b)
		}
	}
	if c.StateFile != "" {
		add("cluster: state_file is for a single router; a member keeps its routes in the store (remove state_file)")
	}
	return p
}

// StoreURL returns the cluster store's URL: cluster.store, the content of
// cluster.store_file, or $FEDROUTER_STORE_URL. Errors never hold the URL.
func (c *Config) StoreURL() (string, error) {
	s := c.Cluster
	switch {
	case s == nil:
		return "", fmt.Errorf("config: no cluster section")
	case s.Store != "":
		return s.Store, nil
	case s.StoreFile != "":
		b, err := os.ReadFile(c.fromConfigDir(s.StoreFile))
		if err != nil {
			return "", fmt.Errorf("config: cluster.store_file: %w", err)
		}
		if u := strings.TrimSpace(string(b)); u != "" {
			return u, nil
		}
		return "", fmt.Errorf("config: cluster.store_file %s is empty", s.StoreFile)
	case os.Getenv(StoreURLEnv) != "":
		return os.Getenv(StoreURLEnv), nil
	}
	return "", fmt.Errorf("config: cluster: no store URL: set cluster.store, cluster.store_file or $%s", StoreURLEnv)
}

// fromConfigDir takes a relative path from the configuration file's
// directory.
func (c *Config) fromConfigDir(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(c.file), p)
}
