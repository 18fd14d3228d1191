package topology

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A snapshot's JSON gives ages as Go duration strings and a router's
// instance as a string, and reads back to the same snapshot (the CLI
// decodes what the router encodes).
func TestSnapshotJSONRoundTrip(t *testing.T) {
	s := Snapshot{Router: "t1", Radius: 1,
		Routers: []RouterView{{Router: "t1", Instance: 1764676800000000123, Seq: 4, Age: 1500 * time.Millisecond, Self: true}},
		Brokers: []BrokerView{}, Routes: []BrokerRoutes{},
		Links: []LinkView{{From: "a", To: "b", Cost: 1, State: "up", Router: "t1", Age: 2*time.Minute + 3*time.Second}}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"instance":"1764676800000000123"`, `"age":"1.5s"`, `"age":"2m3s"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "age_ns") || strings.Contains(string(b), "null") {
		t.Errorf("JSON has age_ns or null:\n%s", b)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("read back\n%+v\nwant\n%+v", back, s)
	}
	var bad Snapshot
	if err := json.Unmarshal([]byte(`{"links":[{"from":"a","to":"b","age":"soon"}]}`), &bad); err == nil || !strings.Contains(err.Error(), `link a > b age "soon"`) {
		t.Errorf("a bad age: %v", err)
	}
}
