package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// What a reload needs of a configuration (router/reload.go): where it
// came from, where its items are written, and the settings that cannot
// change while the router runs, as sums to compare.

// Path is the file the configuration was read from ("" when parsed from
// memory without a name).
func (c *Config) Path() string { return c.file }

// RouteAt is where routes[i] is written: "file:line".
func (c *Config) RouteAt(i int) string { return c.at(fmt.Sprintf("routes[%d]", i)) }

// BrokerAt is where the broker named name is written: "file:line" (the
// file alone when it has no such broker).
func (c *Config) BrokerAt(name string) string {
	for i, b := range c.Brokers {
		if b.Name == name {
			return c.at(fmt.Sprintf("brokers[%d]", i))
		}
	}
	return c.at("brokers")
}

// Setting is a setting that cannot change while the router runs: its
// key as the file writes it, where (file:line), and a sum of its value
// (compared, never shown: some hold secrets).
type Setting struct {
	Key string
	At  string
	Sum string
}

// FixedSettings lists the settings a running router cannot take on:
// who it is (router_id, cluster, state_file), what it listens on and
// how (admin.listen, names, tls, allow_plaintext), what it builds once at
// start (topology, links, ingress, destinations, reconnect, metrics,
// no_path, stall_after, data_path, log.format) and each broker's name, profile, connection count
// and bindings. Sorted by key. The token, the log level, the routes and a
// broker's URLs, credentials and TLS are not among them: they reload.
func (c *Config) FixedSettings() []Setting {
	var out []Setting
	add := func(key, at string, v any) {
		out = append(out, Setting{Key: key, At: at, Sum: sum(v)})
	}
	add("router_id", c.at("router_id"), c.RouterID)
	add("state_file", c.at("state_file"), c.StateFile)
	add("cluster", c.at("cluster"), c.Cluster)
	add("admin.listen", c.at("admin"), c.Admin.Listen)
	add("admin.names", c.at("admin"), c.Admin.Names)
	add("admin.tls", c.at("admin"), c.Admin.TLS)
	add("admin.allow_plaintext", c.at("admin"), c.Admin.AllowPlaintext)
	add("topology", c.at("topology"), c.Topology)
	add("links", c.at("links"), c.Links)
	add("ingress", c.at("ingress"), c.Ingress)
	add("destinations", c.at("destinations"), c.Destinations)
	add("reconnect", c.at("reconnect"), c.Reconnect)
	add("metrics", c.at("metrics"), c.Metrics)
	add("no_path", c.at("no_path"), c.NoPath)
	add("stall_after", c.at("stall_after"), c.StallAfter)
	add("data_path", c.at("data_path"), c.DataPath)
	add("log.format", c.at("log"), c.Log.Format)
	names := make([]string, 0, len(c.Brokers))
	for i, b := range c.Brokers {
		names = append(names, b.Name)
		at, key := c.at(fmt.Sprintf("brokers[%d]", i)), "brokers["+b.Name+"]."
		add(key+"profile", at, b.Profile)
		add(key+"connections", at, max(1, b.Connections))
		add(key+"bindings", at, b.Bindings)
	}
	sort.Strings(names)
	add("brokers (the set of names)", c.at("brokers"), strings.Join(names, ","))
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// sum is a value's SHA-256 over its JSON: equal values sum alike, and
// the sum shows nothing of a secret.
func sum(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte(fmt.Sprintf("%#v", v)) // not reached for these types
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}
