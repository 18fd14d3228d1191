package config

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

// What the router needs of the configuration, derived from the file:
// each broker's amqp-layer configuration, the routes resolved, secrets read
// from their files.

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

// TopologySecret returns the network secret ("" = flooding off), reading
// secret_file if set.
func (c *Config) TopologySecret() (string, error) {
	if c.Topology.SecretFile == "" {
		return c.Topology.Secret, nil
	}
	return readSecretFile(c.Topology.SecretFile)
}

// MinSecretLen is the shortest network secret, in bytes, inline
// (topology.secret) or in a secret_file (after trimming white space): one
// rule for both. The secret is the network's trust boundary (it signs
// every advertisement), so it gets a key's length, not a password's; a
// short or empty file is a mistake — an empty one would turn flooding off
// while multi-hop routes still expect it.
const MinSecretLen = 32

// readSecretFile reads a network secret from path and checks its length.
func readSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("config: topology.secret_file: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	if len(secret) < MinSecretLen {
		return "", fmt.Errorf("config: topology.secret_file %s holds %d bytes; a network secret needs at least %d (e.g. head -c 32 /dev/urandom | base64 > %s)",
			path, len(secret), MinSecretLen, path)
	}
	return secret, nil
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
func (c *Config) DefaultNoPath() []pathpolicy.Step {
	return c.noPath
}

// StatePath is the state file's path: state_file, relative to the config
// file's directory, default fedrouter-<router_id>.routes.json there.
func (c *Config) StatePath() string {
	p := c.StateFile
	if p == "" {
		p = "fedrouter-" + c.RouterID + ".routes.json"
	}
	return c.fromConfigDir(p)
}

// brokerConfig converts the file's form into the amqp layer's. readFiles
// loads password_file: the daemon needs it, check-config does not (it may
// run where the secrets are not readable).
func (b BrokerSpec) brokerConfig(readFiles bool) (amqp.BrokerConfig, error) {
	urls := b.URLs
	if b.URL != "" {
		urls = []string{b.URL}
	}
	bc := amqp.BrokerConfig{
		Name: b.Name, URLs: urls, Profile: b.Profile, Username: b.Username, Password: b.Password,
		SASL: b.SASL, VHost: b.VHost, RequireTLS: b.RequireTLS,
		TLS: amqp.TLSConfig{CAFile: b.TLS.CAFile, CertFile: b.TLS.CertFile, KeyFile: b.TLS.KeyFile,
			ServerName: b.TLS.ServerName, InsecureSkipVerify: b.TLS.InsecureSkipVerify},
		Management: amqp.ManagementConfig{URL: b.Management.URL, Username: b.Management.Username, Password: b.Management.Password},
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
func (c *Config) BrokerConfigs() ([]amqp.BrokerConfig, error) {
	out := make([]amqp.BrokerConfig, 0, len(c.Brokers))
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
func (c *Config) Backoff() amqp.Backoff {
	b := amqp.DefaultBackoff()
	b.Min, b.Max = time.Duration(c.Reconnect.Min), time.Duration(c.Reconnect.Max)
	return b
}
