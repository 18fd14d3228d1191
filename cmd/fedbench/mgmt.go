package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// mgmt is a minimal client of the RabbitMQ management HTTP API (vhost /,
// guest/guest as the harness configures the nodes).
type mgmt struct {
	base string
	hc   *http.Client
}

// errNotFound is a 404 from the management API.
var errNotFound = errors.New("fedbench: not found")

func newMgmt(base string) *mgmt {
	return &mgmt{base: base, hc: &http.Client{Timeout: 30 * time.Second}}
}

func (m *mgmt) do(ctx context.Context, method, path string, body, out any) error {
	return callJSON(ctx, m.hc, method, m.base, path, "guest:guest", body, out)
}

// callJSON sends body as JSON to base+path, with basic auth "user:pass"
// if given, and decodes a 2xx answer into out (when not nil); a 404 is
// errNotFound, other answers an error with the status and the body.
func callJSON(ctx context.Context, hc *http.Client, method, base, path, auth string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return err
	}
	if user, pass, ok := strings.Cut(auth, ":"); ok {
		req.SetBasicAuth(user, pass)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%s %s: %w", method, path, errNotFound)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return nil
}

func esc(s string) string { return url.PathEscape(s) }

func (m *mgmt) declareQueue(ctx context.Context, q string) error {
	return m.do(ctx, "PUT", "/api/queues/%2F/"+esc(q), map[string]any{"durable": true}, nil)
}

// declareFanout declares fanout exchange x bound to a durable queue q: the
// destination of a queue route (RabbitMQ routes deliver to an exchange).
func (m *mgmt) declareFanout(ctx context.Context, x, q string) error {
	if err := m.do(ctx, "PUT", "/api/exchanges/%2F/"+esc(x), map[string]any{"type": "fanout", "durable": true}, nil); err != nil {
		return err
	}
	if err := m.declareQueue(ctx, q); err != nil {
		return err
	}
	return m.do(ctx, "POST", "/api/bindings/%2F/e/"+esc(x)+"/q/"+esc(q), map[string]any{}, nil)
}

// declareShared declares fanout exchange x and the durable queue q with a
// single active consumer bound to it, as fedrouter declares a fan-out
// group's shared queue (same arguments, or its own declaration fails).
func (m *mgmt) declareShared(ctx context.Context, x, q string) error {
	if err := m.do(ctx, "PUT", "/api/exchanges/%2F/"+esc(x), map[string]any{"type": "fanout", "durable": true}, nil); err != nil {
		return err
	}
	args := map[string]any{"durable": true, "arguments": map[string]any{"x-single-active-consumer": true}}
	if err := m.do(ctx, "PUT", "/api/queues/%2F/"+esc(q), args, nil); err != nil {
		return err
	}
	return m.do(ctx, "POST", "/api/bindings/%2F/e/"+esc(x)+"/q/"+esc(q), map[string]any{}, nil)
}

func ignoreNotFound(err error) error {
	if errors.Is(err, errNotFound) {
		return nil
	}
	return err
}

func (m *mgmt) deleteQueue(ctx context.Context, q string) error {
	return ignoreNotFound(m.do(ctx, "DELETE", "/api/queues/%2F/"+esc(q), nil, nil))
}

func (m *mgmt) deleteExchange(ctx context.Context, x string) error {
	return ignoreNotFound(m.do(ctx, "DELETE", "/api/exchanges/%2F/"+esc(x), nil, nil))
}

// queueMessages is the queue's message count as the management statistics
// last saw it: they lag the queue by up to the statistics interval (5 s),
// so it serves only to verify after the fact, never to time.
func (m *mgmt) queueMessages(ctx context.Context, q string) (int, error) {
	var info struct {
		Messages *int `json:"messages"`
	}
	if err := m.do(ctx, "GET", "/api/queues/%2F/"+esc(q), nil, &info); err != nil {
		return 0, err
	}
	if info.Messages == nil {
		return -1, nil // no statistics yet
	}
	return *info.Messages, nil
}

// waitQueueMessages polls until q holds want messages (per the lagging
// statistics) or the deadline passes.
func (m *mgmt) waitQueueMessages(ctx context.Context, q string, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := -1
	for {
		n, err := m.queueMessages(ctx, q)
		if err != nil {
			return err
		}
		if n == want {
			return nil
		}
		last = n
		if time.Now().After(deadline) {
			return fmt.Errorf("queue %s holds %d messages after %s, want %d", q, last, timeout, want)
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// names lists the names of the queues, exchanges or shovel parameters
// (kind: "queues", "exchanges", "parameters/shovel") in vhost /.
func (m *mgmt) names(ctx context.Context, kind string) ([]string, error) {
	var items []struct {
		Name string `json:"name"`
	}
	if err := m.do(ctx, "GET", "/api/"+kind+"/%2F", nil, &items); err != nil {
		return nil, err
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Name
	}
	return out, nil
}

// shovel is a dynamic shovel's definition (the parameter's value).
type shovel map[string]any

func (m *mgmt) putShovel(ctx context.Context, name string, def shovel) error {
	return m.do(ctx, "PUT", "/api/parameters/shovel/%2F/"+esc(name), map[string]any{"value": def}, nil)
}

func (m *mgmt) deleteShovel(ctx context.Context, name string) error {
	return ignoreNotFound(m.do(ctx, "DELETE", "/api/parameters/shovel/%2F/"+esc(name), nil, nil))
}

// shovelExists says whether the shovel's parameter is still defined: with
// src-delete-after the shovel removes it once it has moved (and, with
// ack-mode on-confirm, acknowledged at the source) that many messages.
func (m *mgmt) shovelExists(ctx context.Context, name string) (bool, error) {
	err := m.do(ctx, "GET", "/api/parameters/shovel/%2F/"+esc(name), nil, nil)
	if errors.Is(err, errNotFound) {
		return false, nil
	}
	return err == nil, err
}

// shovelStatus is one entry of GET /api/shovels.
type shovelStatus struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Reason string `json:"reason"`
}

func (m *mgmt) shovels(ctx context.Context) ([]shovelStatus, error) {
	var out []shovelStatus
	err := m.do(ctx, "GET", "/api/shovels/%2F", nil, &out)
	return out, err
}

// version is the RabbitMQ and Erlang version of the node.
func (m *mgmt) version(ctx context.Context) (rabbit, erlang string, err error) {
	var ov struct {
		Rabbit string `json:"rabbitmq_version"`
		Erlang string `json:"erlang_version"`
	}
	err = m.do(ctx, "GET", "/api/overview", nil, &ov)
	return ov.Rabbit, ov.Erlang, err
}
