package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const clusterBase = "router_id: r1\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic}\n"

func TestClusterDefaultsAndStoreURL(t *testing.T) {
	cfg, err := Parse("f.yaml", []byte(clusterBase+"cluster:\n  name: prod\n  store: postgres://u:p@h/db\n  local_brokers: [a]\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Cluster
	if time.Duration(c.Heartbeat) != DefaultHeartbeat || c.SuspectAfter != DefaultSuspectAfter || time.Duration(c.Lease) != DefaultLease {
		t.Fatalf("defaults not applied: %+v", c)
	}
	if u, err := cfg.StoreURL(); err != nil || u != "postgres://u:p@h/db" {
		t.Fatalf("StoreURL = %q, %v", u, err)
	}
	single, err := Parse("f.yaml", []byte(clusterBase))
	if err != nil || single.Cluster != nil {
		t.Fatalf("without cluster: the router is single: %+v, %v", single.Cluster, err)
	}
}

func TestClusterStoreFromFileAndEnv(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "store.url"), []byte("postgres://u:s3cret@h/db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(path, []byte(clusterBase+"cluster: {name: prod, store_file: store.url}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := cfg.StoreURL(); err != nil || u != "postgres://u:s3cret@h/db" {
		t.Fatalf("store_file: %q, %v", u, err)
	}
	cfg, err = Parse("f.yaml", []byte(clusterBase+"cluster: {name: prod}\n"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(StoreURLEnv, "")
	if _, err := cfg.StoreURL(); err == nil || !strings.Contains(err.Error(), StoreURLEnv) {
		t.Fatalf("no URL anywhere: %v; want an error naming %s", err, StoreURLEnv)
	}
	t.Setenv(StoreURLEnv, "postgres://u:e@h/db")
	if u, err := cfg.StoreURL(); err != nil || u != "postgres://u:e@h/db" {
		t.Fatalf("from the environment: %q, %v", u, err)
	}
}

func TestClusterBadSections(t *testing.T) {
	cases := []struct{ name, section, want string }{
		{"no name", "cluster: {store: 'postgres://h/db'}", "cluster.name is required"},
		{"bad name", "cluster: {name: 'a b'}", `cluster.name "a b"`},
		{"both stores", "cluster: {name: c, store: 'postgres://h/db', store_file: f}", "store or store_file, not both"},
		{"not postgres", "cluster: {name: c, store: 'mysql://u:hidden@h/db'}", "want a postgres:// URL"},
		{"lease too short", "cluster: {name: c, heartbeat: 2s, lease: 3s}", "cluster.lease 3s: want at least two heartbeats (4s)"},
		{"heartbeat too fast", "cluster: {name: c, heartbeat: 1ms}", "cluster.heartbeat 1ms"},
		{"suspect", "cluster: {name: c, suspect_after: -1}", "cluster.suspect_after -1"},
		{"admin url", "cluster: {name: c, admin_url: 'ftp://x'}", `cluster.admin_url "ftp://x"`},
		{"local broker", "cluster: {name: c, local_brokers: [zz]}", `cluster.local_brokers: "zz" is not a configured broker`},
		{"state file", "state_file: s.json\ncluster: {name: c}", "state_file is for a single router"},
	}
	for _, c := range cases {
		_, err := Parse("f.yaml", []byte(clusterBase+c.section+"\n"))
		if err == nil || !strings.Contains(err.Error(), "f.yaml:") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error at f.yaml holding %q", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "hidden") {
			t.Errorf("%s: the store's password is in the error: %v", c.name, err)
		}
	}
}
