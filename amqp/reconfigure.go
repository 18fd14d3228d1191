package amqp

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// errReconfigured is why a connection was dropped by Reconfigure.
var errReconfigured = errors.New("its settings changed (configuration reloaded): re-dialling with the new ones")

// Reconfigure replaces the settings the connection dials with (URLs,
// credentials, SASL, TLS files read again, require_tls) and re-dials at
// once: the connection held now is dropped (its links see a connection
// error and re-attach, as after a cut), a wait for the next attempt is
// cut short, and a connection Failed on authentication tries again. The
// name, the profile and the management settings are the Conn's for its
// life (a reload refuses to change them). An invalid cfg changes nothing.
func (c *Conn) Reconfigure(cfg BrokerConfig) error {
	if cfg.Name != c.cfg.Name {
		return &Error{Op: "configure", Broker: c.cfg.Name, Err: fmt.Errorf("the name cannot change (to %q)", cfg.Name)}
	}
	if err := cfg.Validate(); err != nil {
		return &Error{Op: "configure", Broker: c.cfg.Name, Err: err}
	}
	targets, err := cfg.dialTargets(c.opts.ContainerID)
	if err != nil {
		return &Error{Op: "configure", Broker: c.cfg.Name, Err: err}
	}
	for i := range targets {
		targets[i].opts.IdleTimeout = c.opts.IdleTimeout
	}
	c.mu.Lock()
	c.live, c.targets = cfg, targets
	c.mu.Unlock()
	c.dropEngine() // routes on the engine data path re-dial with the new settings too
	select {
	case c.redial <- struct{}{}:
	default: // a re-dial is pending already: it reads the new targets
	}
	return nil
}

// DialFingerprint sums what a connection dials with: the URLs, the
// credentials, SASL, require_tls, the TLS settings and the contents of
// the TLS files they name (read now: a certificate renewed in place is
// a change). Two equal sums dial alike. It holds no secret in clear.
func (b BrokerConfig) DialFingerprint() (string, error) {
	h := sha256.New()
	field := func(s string) {
		_, _ = fmt.Fprintf(h, "%d:%s;", len(s), s) // length-prefixed: no two lists sum alike; a hash's Write never fails
	}
	field(strings.Join(b.URLs, "\x00"))
	for _, s := range []string{b.Username, b.Password, b.SASL, fmt.Sprint(b.RequireTLS),
		b.TLS.CAFile, b.TLS.CertFile, b.TLS.KeyFile, b.TLS.ServerName, fmt.Sprint(b.TLS.InsecureSkipVerify)} {
		field(s)
	}
	for _, f := range []string{b.TLS.CAFile, b.TLS.CertFile, b.TLS.KeyFile} {
		if f == "" {
			field("")
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("broker %s: TLS file: %w", b.Name, err)
		}
		field(string(data))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ManagementFingerprint sums the management API's settings in force:
// its URL (configured or derived from the first AMQP URL), the
// credentials it uses (its own, or the AMQP ones it borrows), the vhost
// and, over https, the TLS settings. Only RabbitMQ's profile uses them;
// for other profiles it is "". It holds no secret in clear.
func (b BrokerConfig) ManagementFingerprint() string {
	if b.Profile != "rabbitmq" {
		return ""
	}
	base, user, pass, err := b.managementEndpoint()
	if err != nil {
		base = "error: " + err.Error()
	}
	parts := []string{base, user, pass, b.VHost}
	if strings.HasPrefix(base, "https://") {
		parts = append(parts, b.TLS.CAFile, b.TLS.CertFile, b.TLS.KeyFile, b.TLS.ServerName, fmt.Sprint(b.TLS.InsecureSkipVerify))
	}
	h := sha256.New()
	for _, p := range parts {
		_, _ = fmt.Fprintf(h, "%d:%s;", len(p), p) // a hash's Write never fails
	}
	return hex.EncodeToString(h.Sum(nil))
}
