package amqp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/internal/redact"
)

// SASL mechanisms a broker connection may use.
const (
	SASLPlain     = "plain"
	SASLAnonymous = "anonymous"
	SASLExternal  = "external"
	SASLNone      = "none" // no SASL layer at all
)

// BrokerConfig says how to reach one broker.
type BrokerConfig struct {
	Name     string   // unique name in the federation, e.g. "paris"
	URLs     []string // amqp:// or amqps:// URLs, tried in order (failover list)
	Profile  string   // rabbitmq, proton, generic, artemis, qpid
	Username string
	Password string
	// SASL mechanism; empty means plain when a username is set (in the
	// config or in the URL), anonymous otherwise.
	SASL string
	TLS  TLSConfig
	// Management is the broker's management endpoint (RabbitMQ's HTTP API).
	// Empty URL: derived from the first AMQP URL's host: https on port
	// 15671 for amqps://, http on 15672 for amqp:// (rabbitmgmt.go).
	Management ManagementConfig
	// VHost for RabbitMQ management calls; empty means "/".
	VHost string
	// RequireTLS refuses a plain amqp:// URL: credentials and messages go
	// over TLS only.
	RequireTLS bool
}

// TLSConfig is the TLS part of a broker's configuration. TLS is used for
// amqps:// URLs.
type TLSConfig struct {
	CAFile             string // PEM bundle of trusted CAs; empty: system roots
	CertFile, KeyFile  string // client certificate (needed for SASL EXTERNAL)
	ServerName         string // overrides the host name checked in the certificate
	InsecureSkipVerify bool   // tests only; logged loudly by the daemon
}

// ManagementConfig points at a broker's management API.
type ManagementConfig struct {
	URL      string
	Username string // empty: the broker's AMQP username
	Password string
}

// Validate reports every problem with the configuration at once.
func (b *BrokerConfig) Validate() error {
	var errs []error
	if b.Name == "" {
		errs = append(errs, errors.New("name is empty"))
	}
	if len(b.URLs) == 0 {
		errs = append(errs, errors.New("no URL"))
	}
	for _, raw := range b.URLs {
		if _, err := parseBrokerURL(raw); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := LookupProfile(b.Profile); err != nil {
		errs = append(errs, err)
	}
	switch b.SASL {
	case "", SASLPlain, SASLAnonymous, SASLExternal, SASLNone:
	default:
		errs = append(errs, fmt.Errorf("unknown SASL mechanism %q (want plain, anonymous, external or none)", b.SASL))
	}
	if b.SASL == SASLPlain && b.Username == "" && !anyURLHasUser(b.URLs) {
		errs = append(errs, errors.New("SASL plain needs a username"))
	}
	if (b.TLS.CertFile == "") != (b.TLS.KeyFile == "") {
		errs = append(errs, errors.New("tls: cert file and key file go together"))
	}
	errs = append(errs, b.checkManagement()...)
	if b.RequireTLS {
		for _, raw := range b.URLs {
			if u, err := url.Parse(raw); err == nil && u.Scheme == "amqp" {
				errs = append(errs, fmt.Errorf("URL %q: require_tls is set: use amqps://", Redact(raw)))
			}
		}
	}
	return errors.Join(errs...)
}

// PlaintextCredentials returns the URLs (redacted) over which a password
// would cross the network in clear: SASL PLAIN on a plain amqp:// URL, or
// RabbitMQ's management API on http://, to a host that is not a loopback
// address. The daemon warns about each at
// start; RequireTLS makes them an error.
func (b *BrokerConfig) PlaintextCredentials() []string {
	var out []string
	for _, raw := range b.URLs {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "amqp" || loopback(u.Hostname()) {
			continue
		}
		user := b.Username
		if u.User != nil && u.User.Username() != "" {
			user = u.User.Username()
		}
		if b.mechanism(user) == SASLPlain {
			out = append(out, Redact(raw))
		}
	}
	return append(out, b.managementPlaintext()...)
}

// loopback says whether host names this machine: "localhost" or a
// loopback address.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func anyURLHasUser(urls []string) bool {
	for _, raw := range urls {
		if u, err := url.Parse(raw); err == nil && u.User != nil && u.User.Username() != "" {
			return true
		}
	}
	return false
}

func parseBrokerURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("URL %q: %w", Redact(raw), urlParseError(raw, err))
	}
	if u.Scheme != "amqp" && u.Scheme != "amqps" {
		return nil, fmt.Errorf("URL %q: scheme must be amqp or amqps", Redact(raw))
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("URL %q: no host", Redact(raw))
	}
	if u.User == nil && Redact(raw) != raw {
		// amqp://localhost:12345/Secr3t@h: a password with '/' ends the
		// host early, and its digits would be dialed as a port; what is
		// logged would not be what is dialed.
		return nil, fmt.Errorf("URL %q: an '@' after the host part and no user information: write a '/' in a password as %%2F and an '@' in a path as %%40 (the rest is not shown: it may be a password)", Redact(raw))
	}
	return u, nil
}

// Redact hides the password of a broker address for logs, errors and
// API answers (internal/redact, which the route vocabulary shares).
func Redact(s string) string { return redact.Address(s) }

// urlParseError is url.Parse's complaint about raw without the URL it
// repeats (password and all). When raw carries a password the complaint
// itself is left out: it may quote part of it (a '/' in a password ends
// the host early: `invalid port ":secret" after host`).
func urlParseError(raw string, err error) error {
	if Redact(raw) != raw {
		return errors.New("does not parse as a URL (write reserved characters of the user name and password as %XX)")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// dialTarget is one URL prepared for go-amqp: credentials move from the URL
// into ConnOptions so they never appear in errors or logs.
type dialTarget struct {
	addr     string // URL without user info
	redacted string
	opts     *goamqp.ConnOptions
}

func (b *BrokerConfig) dialTargets(containerID string) ([]dialTarget, error) {
	tlsConf, err := b.TLS.build()
	if err != nil {
		return nil, err
	}
	out := make([]dialTarget, 0, len(b.URLs))
	for _, raw := range b.URLs {
		u, user, pass, err := urlCredentials(raw, b.Username, b.Password)
		if err != nil {
			return nil, err
		}
		redacted := Redact(raw)
		opts := &goamqp.ConnOptions{ContainerID: containerID, HostName: u.Hostname()}
		if u.Scheme == "amqps" {
			opts.TLSConfig = tlsConf
		}
		switch mech := b.mechanism(user); mech {
		case SASLPlain:
			opts.SASLType = goamqp.SASLTypePlain(user, pass)
		case SASLAnonymous:
			opts.SASLType = goamqp.SASLTypeAnonymous()
		case SASLExternal:
			opts.SASLType = goamqp.SASLTypeExternal("")
		}
		out = append(out, dialTarget{addr: u.String(), redacted: redacted, opts: opts})
	}
	return out, nil
}

// urlCredentials parses raw and takes its user info out: the URL's user
// and password when it has them, else user and pass.
func urlCredentials(raw, user, pass string) (*url.URL, string, string, error) {
	u, err := parseBrokerURL(raw)
	if err != nil {
		return nil, "", "", err
	}
	if u.User != nil {
		user = u.User.Username()
		if p, ok := u.User.Password(); ok {
			pass = p
		}
	}
	u.User = nil
	return u, user, pass, nil
}

func (b *BrokerConfig) mechanism(user string) string {
	if b.SASL != "" {
		return b.SASL
	}
	if user != "" {
		return SASLPlain
	}
	return SASLAnonymous
}

// Check reads the TLS files (CA bundle, client certificate and key) as a
// connection to the broker does before it dials, and connects nowhere:
// what would stop the router's start, found by check-config.
func (t TLSConfig) Check() error {
	_, err := t.build()
	return err
}

func (t TLSConfig) build() (*tls.Config, error) {
	c := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls: CA file %s holds no PEM certificate", t.CAFile)
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
