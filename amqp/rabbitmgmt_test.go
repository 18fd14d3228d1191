package amqp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// fakeMgmt answers management API paths (escaped, with the query) from a
// table and records what was sent, so the tests check the paths, the
// credentials and the bodies the client puts on the wire.
type fakeMgmt struct {
	mu      sync.Mutex
	answers map[string]string // "METHOD /escaped/path?query" -> JSON; absent: 404
	got     map[string]string // the same key -> the request body
}

func (f *fakeMgmt) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if u, p, ok := r.BasicAuth(); !ok || u != "mgr" || p != "pw" {
		http.Error(w, `{"error":"not_authorised"}`, http.StatusUnauthorized)
		return
	}
	key := r.Method + " " + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		key += "?" + r.URL.RawQuery
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.got[key] = string(body)
	answer, ok := f.answers[key]
	f.mu.Unlock()
	switch {
	case !ok:
		http.Error(w, `{"error":"Object Not Found","reason":"Not Found"}`, http.StatusNotFound)
	case answer == "500":
		http.Error(w, `{"error":"internal"}`, http.StatusInternalServerError)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer) // a failed write shows as the client's error
	}
}

func newFakeMgmt(t *testing.T, answers map[string]string) (*fakeMgmt, *RabbitManagement) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	f := &fakeMgmt{answers: answers, got: map[string]string{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	m, err := NewRabbitManagement(BrokerConfig{Management: ManagementConfig{URL: srv.URL + "/", Username: "mgr", Password: "pw"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return f, m
}

func TestRabbitManagementQueueMessages(t *testing.T) {
	_, m := newFakeMgmt(t, map[string]string{
		"GET /api/queues/%2F/q%201": `{"name":"q 1","messages":3}`,
		"GET /api/queues/%2F/fresh": `{"name":"fresh"}`,
	})
	ctx := context.Background()
	if n, known, err := m.QueueMessages(ctx, "q 1"); n != 3 || !known || err != nil {
		t.Errorf("q 1: %d %v %v", n, known, err)
	}
	if n, known, err := m.QueueMessages(ctx, "fresh"); n != 0 || known || err != nil {
		t.Errorf("no statistics yet: %d %v %v", n, known, err)
	}
	if _, _, err := m.QueueMessages(ctx, "gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing queue: %v, want ErrNotFound", err)
	}
}

func TestRabbitManagementNames(t *testing.T) {
	_, m := newFakeMgmt(t, map[string]string{
		"GET /api/queues/%2F?columns=name":    `[{"name":"a"},{"name":"b"}]`,
		"GET /api/exchanges/%2F?columns=name": `[{"name":""},{"name":"amq.direct"}]`,
		"GET /api/parameters/shovel/%2F":      `[]`,
	})
	ctx := context.Background()
	for _, c := range []struct {
		list func(context.Context) ([]string, error)
		want []string
	}{
		{m.QueueNames, []string{"a", "b"}},
		{m.ExchangeNames, []string{"", "amq.direct"}},
		{m.ShovelNames, []string{}},
	} {
		if got, err := c.list(ctx); err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("got %q, %v; want %q", got, err, c.want)
		}
	}
}

func TestRabbitManagementShovels(t *testing.T) {
	f, m := newFakeMgmt(t, map[string]string{
		"PUT /api/parameters/shovel/%2F/s1":    ``,
		"GET /api/parameters/shovel/%2F/s1":    `{"name":"s1"}`,
		"GET /api/parameters/shovel/%2F/flaky": `500`,
		"GET /api/shovels/%2F":                 `[{"name":"s1","state":"terminated","reason":"needed a restart"}]`,
		"GET /api/overview":                    `{"rabbitmq_version":"3.10.8","erlang_version":"25.2"}`,
	})
	ctx := context.Background()
	def := map[string]any{"src-uri": "amqp://", "src-queue": "q", "src-delete-after": 10}
	if err := m.PutShovel(ctx, "s1", def); err != nil {
		t.Fatal(err)
	}
	var body struct{ Value map[string]any }
	if err := json.Unmarshal([]byte(f.got["PUT /api/parameters/shovel/%2F/s1"]), &body); err != nil || body.Value["src-queue"] != "q" {
		t.Errorf("PUT body %q: %v", f.got["PUT /api/parameters/shovel/%2F/s1"], err)
	}
	if ok, err := m.ShovelExists(ctx, "s1"); !ok || err != nil {
		t.Errorf("ShovelExists(s1): %v %v", ok, err)
	}
	if ok, err := m.ShovelExists(ctx, "done"); ok || err != nil {
		t.Errorf("ShovelExists(done): %v %v", ok, err)
	}
	var me *MgmtError
	if _, err := m.ShovelExists(ctx, "flaky"); !errors.As(err, &me) || me.Status != http.StatusInternalServerError {
		t.Errorf("ShovelExists(flaky): %v, want a MgmtError with status 500", err)
	}
	if err := m.DeleteShovel(ctx, "done"); err != nil {
		t.Errorf("deleting a shovel that is gone: %v", err)
	}
	sts, err := m.Shovels(ctx)
	if err != nil || len(sts) != 1 || sts[0] != (ShovelStatus{Name: "s1", State: "terminated", Reason: "needed a restart"}) {
		t.Errorf("Shovels: %+v, %v", sts, err)
	}
	if ov, err := m.Overview(ctx); err != nil || ov != (Overview{RabbitMQVersion: "3.10.8", ErlangVersion: "25.2"}) {
		t.Errorf("Overview: %+v, %v", ov, err)
	}
}
