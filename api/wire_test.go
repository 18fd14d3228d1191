package api_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/cluster"
	"github.com/fedrouter/fedrouter/routes"
)

var update = flag.Bool("update", false, "rewrite api/testdata/*.json (the pinned wire format: only for a change meant to reach every client)")

// The wire format is a promise to every client (docs/admin-api.md, the
// CLI's --json): these tests pin the JSON of every body the route,
// cluster-member and link vocabulary makes, each with every field set,
// byte for byte, so that moving the types between packages cannot change
// a byte unnoticed.

var at = time.Date(2026, 12, 4, 21, 7, 0, 123456789, time.UTC)

func fullSpec() routes.Spec {
	return routes.Spec{
		Kind: routes.KindQueue, Dest: "paris", Src: "london", Exchange: "amq.direct", Queue: "orders",
		Key: "k.#", DestExchange: "other", DivertBindings: true, DestQueue: "orders.paris", MaxMoves: 3,
		Durable: true, Ack: 10, Credit: 500, Push: true, Cost: 2,
		NoPath: []string{"hold 10m", "dead-letter"}, OnReject: routes.DeadLetter, DeadLetterQueue: "dlq",
		OutcomeTimeout: 45 * time.Second, Force: true,
	}
}

func fullCounters() routes.Counters {
	return routes.Counters{Sent: 1, Forwarded: 2, Redelivered: 3, Rejected: 4, DeadLettered: 5, NoOutcome: 6,
		Looped: 7, NoPath: 8, Rerouted: 9, Copies: 10, CopiesViaTransit: 11, InFlight: 12, Moved: 13, Parked: 14, Lost: 15}
}

func fullStatus() routes.Status {
	return routes.Status{
		ID: "0123456789ab", Spec: fullSpec(), Origin: routes.OriginRuntime, State: routes.StateStalled,
		Since: at, Detail: "waiting for queue orders", LastError: "amqp: link detached", LastErrorAt: at.Add(time.Second),
		RetryIn: "5s", Demand: []string{"k.a", "k.b"}, DemandSource: "events", Holder: "paris-1", Epoch: 7,
		Counters: fullCounters(),
	}
}

func fullLink() routes.LinkStatus {
	return routes.LinkStatus{
		Src: "london", Dest: "tokyo", State: routes.StateOperational, LastError: "gone", Routes: 2,
		Via: []string{"paris"}, Ingress: true,
		Transit: []routes.TransitStatus{{
			Broker: "london", Dest: "tokyo", Via: "paris", Queue: "fedrouter.transit.tokyo",
			State: routes.StateWaiting, Since: at, LastError: "refused", DataPath: "engine", Counters: fullCounters(),
			IngressRefused: &routes.IngressRefusals{RouterOwned: 1, NotAllowed: 2},
		}},
	}
}

func fullCluster() api.ClusterStatus {
	return api.ClusterStatus{
		Name: "eu", Self: "paris-1", Heartbeat: "1s", Lease: "10s", ReadAt: at, Joined: true,
		Members: []api.MemberStatus{{
			ID: "paris-1", State: string(cluster.Suspect), LastBeat: at, BeatAgo: "3.2s", AdminURL: "https://paris-1:9595",
			Brokers: []string{"paris", "london"}, Local: []string{"paris"}, Routes: 4, MaxEpoch: 9, Incarnate: "i-1",
		}},
		Metrics: api.ClusterCounters{Held: 4, Takeovers: 1, StoreErrors: 2, LastRenewal: "3ms"},
	}
}

func TestWireFormatPinned(t *testing.T) {
	for _, c := range []struct {
		file string
		v    any
		full bool // every field set; else every field zero (what omitempty drops)
	}{
		{"spec.json", fullSpec(), true},
		{"status.json", fullStatus(), true},
		{"link.json", fullLink(), true},
		{"routepage.json", api.RoutePage{Routes: []routes.Status{fullStatus()}, Next: "cursor", Partial: "store down"}, true},
		{"cluster.json", fullCluster(), true},
		{"status-zero.json", routes.Status{}, false},
		{"link-zero.json", routes.LinkStatus{Transit: []routes.TransitStatus{{}}}, false},
		{"cluster-zero.json", api.ClusterStatus{Members: []api.MemberStatus{{}}}, false},
	} {
		t.Run(c.file, func(t *testing.T) {
			if c.full {
				allSet(t, reflect.ValueOf(c.v), reflect.TypeOf(c.v).String())
			}
			got, err := json.MarshalIndent(c.v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", c.file)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("the JSON of %T changed:\n got %s\nwant %s", c.v, got, want)
			}
			// What a client decodes is what was sent.
			back := reflect.New(reflect.TypeOf(c.v))
			if err := json.Unmarshal(want, back.Interface()); err != nil {
				t.Fatalf("decoding %s: %v", path, err)
			}
			if !reflect.DeepEqual(back.Elem().Interface(), c.v) {
				t.Fatalf("%s decodes to\n%+v\nwant\n%+v", path, back.Elem().Interface(), c.v)
			}
		})
	}
}

// TestSpecJSONRefusesUnknownFields: a misspelt option in a route is an
// error naming it, never silently dropped.
func TestSpecJSONRefusesUnknownFields(t *testing.T) {
	var s routes.Spec
	err := json.Unmarshal([]byte(`{"kind":"queue","credti":5}`), &s)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(`"credti"`)) {
		t.Fatalf("unknown field: err %v, want one naming \"credti\"", err)
	}
	err = json.Unmarshal([]byte(`{"kind":"queue","outcome_timeout":"soon"}`), &s)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("outcome_timeout")) {
		t.Fatalf("bad duration: err %v, want one naming outcome_timeout", err)
	}
}

// allSet fails when any exported field of v, at any depth, is its zero
// value (or an empty slice): a body pinned with a field left out would
// not pin that field's JSON.
func allSet(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	if v.IsZero() {
		t.Errorf("%s is not set: the pinned body must set every field", path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		allSet(t, v.Elem(), path)
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			allSet(t, v.Index(i), path+"[]")
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() {
				allSet(t, v.Field(i), path+"."+f.Name)
			}
		}
	}
}
