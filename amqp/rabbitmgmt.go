package amqp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// RabbitManagement is a small client of RabbitMQ's management HTTP API:
// the objects fedrouter needs and RabbitMQ 3.10's AMQP 1.0 plugin cannot
// make (durable named subscription queues and their bindings).
type RabbitManagement struct {
	base  string // e.g. http://127.0.0.1:15672
	user  string
	pass  string
	vhost string
	http  *http.Client
}

// NewRabbitManagement returns a client for cfg's management endpoint.
func NewRabbitManagement(cfg BrokerConfig) (*RabbitManagement, error) {
	base, user, pass, err := cfg.managementEndpoint()
	if err != nil {
		return nil, err
	}
	vhost := cfg.VHost
	if vhost == "" {
		vhost = "/"
	}
	// An own transport, so Close can drop its idle keep-alive connections
	// (and their goroutines) when the owner is done.
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second}
	if strings.HasPrefix(base, "https://") {
		// The broker's TLS settings hold for its management API too: its
		// CA (ca_file), client certificate and server name.
		if tr.TLSClientConfig, err = cfg.TLS.build(); err != nil {
			return nil, fmt.Errorf("management API: %w", err)
		}
	}
	return &RabbitManagement{base: base, user: user, pass: pass, vhost: vhost,
		http: &http.Client{Timeout: 10 * time.Second, Transport: tr}}, nil
}

// RabbitMQ's management plugin's default ports.
const (
	managementPortHTTP  = "15672"
	managementPortHTTPS = "15671"
)

// managementEndpoint returns the management base URL and credentials. A
// URL not configured is derived from the first AMQP URL's host: https on
// 15671 for amqps:// (a broker reached over TLS is not managed in clear),
// http on 15672 for amqp://.
func (b *BrokerConfig) managementEndpoint() (base, user, pass string, err error) {
	base = strings.TrimRight(b.Management.URL, "/")
	if base == "" {
		if len(b.URLs) == 0 {
			return "", "", "", errors.New("no URL to derive the management URL from")
		}
		u, err := parseBrokerURL(b.URLs[0])
		if err != nil {
			return "", "", "", err
		}
		scheme, port := "http", managementPortHTTP
		if u.Scheme == "amqps" {
			scheme, port = "https", managementPortHTTPS
		}
		base = scheme + "://" + net.JoinHostPort(u.Hostname(), port)
	}
	user, pass = b.Management.Username, b.Management.Password
	if user == "" {
		user, pass = b.Username, b.Password
		if user == "" {
			user, pass = "guest", "guest"
		}
	}
	return base, user, pass, nil
}

// checkManagement judges a configured management URL (a derived one is
// right by construction): http or https with a host, and https when the
// broker requires TLS — the API's basic authentication carries a password.
func (b *BrokerConfig) checkManagement() []error {
	raw := b.Management.URL
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return []error{fmt.Errorf("management URL %q: %w", Redact(raw), urlParseError(raw, err))}
	}
	var errs []error
	if u.Scheme != "http" && u.Scheme != "https" {
		errs = append(errs, fmt.Errorf("management URL %q: scheme must be http or https", Redact(raw)))
	}
	if u.Hostname() == "" {
		errs = append(errs, fmt.Errorf("management URL %q: no host", Redact(raw)))
	}
	if b.RequireTLS && u.Scheme == "http" {
		errs = append(errs, fmt.Errorf("management URL %q: require_tls is set: use https://", Redact(raw)))
	}
	return errs
}

// managementPlaintext returns the management URL (redacted) when a
// RabbitMQ broker's management password would cross the network in
// clear: http:// to a host that is not a loopback address.
func (b *BrokerConfig) managementPlaintext() []string {
	if b.Profile != "rabbitmq" {
		return nil
	}
	base, _, _, err := b.managementEndpoint()
	if err != nil {
		return nil
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || loopback(u.Hostname()) {
		return nil
	}
	return []string{Redact(base)}
}

// Close drops idle HTTP connections. The client stays usable.
func (m *RabbitManagement) Close() { m.http.CloseIdleConnections() }

// MgmtError is a management API call that failed.
type MgmtError struct {
	Method, Path string
	Status       int // 0 when no HTTP answer came
	Body         string
	Err          error
}

func (e *MgmtError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("rabbitmq management %s %s: %v", e.Method, e.Path, e.Err)
	}
	return fmt.Sprintf("rabbitmq management %s %s: HTTP %d: %s", e.Method, e.Path, e.Status, e.Body)
}

func (e *MgmtError) Unwrap() error {
	if e.Status == http.StatusNotFound {
		return ErrNotFound
	}
	return e.Err
}

func (m *RabbitManagement) do(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return &MgmtError{Method: method, Path: path, Err: err}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, m.base+path, rd)
	if err != nil {
		return &MgmtError{Method: method, Path: path, Err: err}
	}
	req.SetBasicAuth(m.user, m.pass)
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.http.Do(req)
	if err != nil {
		return &MgmtError{Method: method, Path: path, Err: err}
	}
	// Read to the end or the limit: closing has nothing to report.
	defer func() { _ = resp.Body.Close() }()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		return &MgmtError{Method: method, Path: path, Status: resp.StatusCode, Body: string(bytes.TrimSpace(data))}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return &MgmtError{Method: method, Path: path, Err: fmt.Errorf("decoding answer: %w", err)}
		}
	}
	return nil
}

func (m *RabbitManagement) vh() string { return url.PathEscape(m.vhost) }

// QueueArgs are the properties of a declared queue.
type QueueArgs struct {
	Durable    bool           `json:"durable"`
	AutoDelete bool           `json:"auto_delete"`
	Arguments  map[string]any `json:"arguments,omitempty"`
}

// DeclareQueue creates queue name (idempotent for equal properties).
func (m *RabbitManagement) DeclareQueue(ctx context.Context, name string, args QueueArgs) error {
	return m.do(ctx, http.MethodPut, "/api/queues/"+m.vh()+"/"+url.PathEscape(name), args, nil)
}

// DeleteQueue removes queue name; a missing queue is not an error.
func (m *RabbitManagement) DeleteQueue(ctx context.Context, name string) error {
	return ignoreNotFound(m.do(ctx, http.MethodDelete, "/api/queues/"+m.vh()+"/"+url.PathEscape(name), nil, nil))
}

// QueueInfo is the part of a queue's description fedrouter reads.
type QueueInfo struct {
	Name       string `json:"name"`
	Durable    bool   `json:"durable"`
	AutoDelete bool   `json:"auto_delete"`
	Exclusive  bool   `json:"exclusive"`
	Messages   int    `json:"messages"`
	Consumers  int    `json:"consumers"`
	// MessageBytes: the bodies' bytes the queue holds (RabbitMQ's
	// message_bytes, what max-length-bytes bounds).
	MessageBytes int64 `json:"message_bytes"`
	// Arguments are the queue's x- arguments (x-expires, ...).
	Arguments map[string]any `json:"arguments,omitempty"`
}

// Queues lists the vhost's queues.
func (m *RabbitManagement) Queues(ctx context.Context) ([]QueueInfo, error) {
	var out []QueueInfo
	err := m.do(ctx, http.MethodGet, "/api/queues/"+m.vh()+"?columns=name,durable,auto_delete,exclusive,messages,consumers", nil, &out)
	return out, err
}

// Queue describes queue name; ErrNotFound if it does not exist.
func (m *RabbitManagement) Queue(ctx context.Context, name string) (QueueInfo, error) {
	var q QueueInfo
	err := m.do(ctx, http.MethodGet, "/api/queues/"+m.vh()+"/"+url.PathEscape(name), nil, &q)
	return q, err
}

// DeclareExchange creates exchange name of kind (fanout, direct, topic, headers).
func (m *RabbitManagement) DeclareExchange(ctx context.Context, name, kind string, durable bool) error {
	return m.do(ctx, http.MethodPut, "/api/exchanges/"+m.vh()+"/"+url.PathEscape(name),
		map[string]any{"type": kind, "durable": durable}, nil)
}

// DeleteExchange removes exchange name; a missing one is not an error.
func (m *RabbitManagement) DeleteExchange(ctx context.Context, name string) error {
	return ignoreNotFound(m.do(ctx, http.MethodDelete, "/api/exchanges/"+m.vh()+"/"+url.PathEscape(name), nil, nil))
}

// ExchangeExists reports whether exchange name exists.
func (m *RabbitManagement) ExchangeExists(ctx context.Context, name string) (bool, error) {
	return m.exists(ctx, m.object("exchanges", name))
}

// exists asks for one object: a 404 is an answer (false), not an error.
func (m *RabbitManagement) exists(ctx context.Context, path string) (bool, error) {
	err := m.do(ctx, http.MethodGet, path, nil, nil)
	if err == nil {
		return true, nil
	}
	if isNotFound(err) {
		return false, nil
	}
	return false, err
}

// object is the path of one named object of a kind ("queues",
// "exchanges", "parameters/shovel") in the client's vhost.
func (m *RabbitManagement) object(kind, name string) string {
	return "/api/" + kind + "/" + m.vh() + "/" + url.PathEscape(name)
}

// Binding is one binding from an exchange to a queue or an exchange.
type Binding struct {
	Source          string         `json:"source"`
	Destination     string         `json:"destination"`
	DestinationType string         `json:"destination_type"` // "queue" or "exchange"
	RoutingKey      string         `json:"routing_key"`
	Arguments       map[string]any `json:"arguments"`
	PropertiesKey   string         `json:"properties_key"` // names the binding in DELETE
}

// Bind binds queue to exchange with key (idempotent).
func (m *RabbitManagement) Bind(ctx context.Context, exchange, queue, key string) error {
	return m.do(ctx, http.MethodPost, "/api/bindings/"+m.vh()+"/e/"+url.PathEscape(exchange)+"/q/"+url.PathEscape(queue),
		map[string]any{"routing_key": key}, nil)
}

// BindArgs binds queue to exchange with key and binding arguments
// (idempotent for equal key and arguments).
func (m *RabbitManagement) BindArgs(ctx context.Context, exchange, queue, key string, args map[string]any) error {
	return m.do(ctx, http.MethodPost, "/api/bindings/"+m.vh()+"/e/"+url.PathEscape(exchange)+"/q/"+url.PathEscape(queue),
		map[string]any{"routing_key": key, "arguments": args}, nil)
}

// BindExchange binds exchange dst to exchange src with key (an
// exchange-to-exchange binding: what src routes with key goes on to dst).
func (m *RabbitManagement) BindExchange(ctx context.Context, src, dst, key string) error {
	return m.do(ctx, http.MethodPost, "/api/bindings/"+m.vh()+"/e/"+url.PathEscape(src)+"/e/"+url.PathEscape(dst),
		map[string]any{"routing_key": key}, nil)
}

// Unbind removes one binding from exchange to queue, named by its
// properties key; a missing one is not an error.
func (m *RabbitManagement) Unbind(ctx context.Context, exchange, queue, propertiesKey string) error {
	return ignoreNotFound(m.do(ctx, http.MethodDelete, "/api/bindings/"+m.vh()+"/e/"+url.PathEscape(exchange)+"/q/"+
		url.PathEscape(queue)+"/"+url.PathEscape(propertiesKey), nil, nil))
}

// SourceBindings lists every binding whose source is exchange (to queues
// and to other exchanges); ErrNotFound if the exchange does not exist.
func (m *RabbitManagement) SourceBindings(ctx context.Context, exchange string) ([]Binding, error) {
	var out []Binding
	err := m.do(ctx, http.MethodGet, "/api/exchanges/"+m.vh()+"/"+url.PathEscape(exchange)+"/bindings/source", nil, &out)
	return out, err
}

// Bindings lists the bindings from exchange to queue.
func (m *RabbitManagement) Bindings(ctx context.Context, exchange, queue string) ([]Binding, error) {
	var out []Binding
	err := m.do(ctx, http.MethodGet, "/api/bindings/"+m.vh()+"/e/"+url.PathEscape(exchange)+"/q/"+url.PathEscape(queue), nil, &out)
	return out, err
}

func isNotFound(err error) bool {
	me, ok := err.(*MgmtError)
	return ok && me.Status == http.StatusNotFound
}

func ignoreNotFound(err error) error {
	if isNotFound(err) {
		return nil
	}
	return err
}

// QueueMessages is queue name's message count as the management
// statistics last saw it; known is false while the queue has none yet
// (just declared), which a plain 0 would hide. The statistics lag the
// queue by up to their interval (5 s by default): use this to verify
// after the fact, never to time.
func (m *RabbitManagement) QueueMessages(ctx context.Context, name string) (n int, known bool, err error) {
	var q struct {
		Messages *int `json:"messages"`
	}
	if err := m.do(ctx, http.MethodGet, m.object("queues", name), nil, &q); err != nil {
		return 0, false, err
	}
	if q.Messages == nil {
		return 0, false, nil
	}
	return *q.Messages, true, nil
}

// QueueNames lists the names of the vhost's queues.
func (m *RabbitManagement) QueueNames(ctx context.Context) ([]string, error) {
	return m.names(ctx, "/api/queues/"+m.vh()+"?columns=name")
}

// ExchangeNames lists the names of the vhost's exchanges, the default
// ("") and amq.* ones included.
func (m *RabbitManagement) ExchangeNames(ctx context.Context) ([]string, error) {
	return m.names(ctx, "/api/exchanges/"+m.vh()+"?columns=name")
}

// ShovelNames lists the vhost's dynamic shovels (their parameters).
func (m *RabbitManagement) ShovelNames(ctx context.Context) ([]string, error) {
	return m.names(ctx, "/api/parameters/shovel/"+m.vh())
}

func (m *RabbitManagement) names(ctx context.Context, path string) ([]string, error) {
	var items []struct {
		Name string `json:"name"`
	}
	if err := m.do(ctx, http.MethodGet, path, nil, &items); err != nil {
		return nil, err
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Name
	}
	return out, nil
}

// PutShovel defines (or redefines) dynamic shovel name; def is its
// definition as the shovel plugin takes it ("src-uri", "src-queue",
// "ack-mode", ...). The plugin must be enabled: a 400 says so otherwise.
func (m *RabbitManagement) PutShovel(ctx context.Context, name string, def map[string]any) error {
	return m.do(ctx, http.MethodPut, m.object("parameters/shovel", name), map[string]any{"value": def}, nil)
}

// DeleteShovel removes dynamic shovel name; a missing one is not an
// error (a shovel with src-delete-after removes itself).
func (m *RabbitManagement) DeleteShovel(ctx context.Context, name string) error {
	return ignoreNotFound(m.do(ctx, http.MethodDelete, m.object("parameters/shovel", name), nil, nil))
}

// ShovelExists reports whether shovel name is still defined: with
// src-delete-after the shovel deletes its own definition once it has
// moved that many messages, so its absence is how one learns it is done.
func (m *RabbitManagement) ShovelExists(ctx context.Context, name string) (bool, error) {
	return m.exists(ctx, m.object("parameters/shovel", name))
}

// ShovelStatus is a running shovel's state (GET /api/shovels).
type ShovelStatus struct {
	Name   string `json:"name"`
	State  string `json:"state"`  // starting, running, terminated
	Reason string `json:"reason"` // why it terminated
}

// Shovels lists the vhost's shovels with their states: a definition that
// cannot work shows here as terminated, with the reason.
func (m *RabbitManagement) Shovels(ctx context.Context) ([]ShovelStatus, error) {
	var out []ShovelStatus
	err := m.do(ctx, http.MethodGet, "/api/shovels/"+m.vh(), nil, &out)
	return out, err
}

// Overview is the part of GET /api/overview fedrouter reads: what runs
// the node, for reports.
type Overview struct {
	RabbitMQVersion string `json:"rabbitmq_version"`
	ErlangVersion   string `json:"erlang_version"`
}

// Overview describes the node.
func (m *RabbitManagement) Overview(ctx context.Context) (Overview, error) {
	var ov Overview
	err := m.do(ctx, http.MethodGet, "/api/overview", nil, &ov)
	return ov, err
}
