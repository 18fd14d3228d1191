package amqp

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// A few queues' depths are asked one by one; many, from the paged
// listing, one call a page: RabbitMQ's management API is asked per
// broker and look, not per route.
func TestRabbitQueueDepths(t *testing.T) {
	var many []string
	var page1, page2 []string
	for i := range 20 {
		many = append(many, fmt.Sprintf("q%d", i))
	}
	for i := range 12 {
		page1 = append(page1, fmt.Sprintf(`{"name":"q%d","messages_ready":%d}`, i, i))
	}
	page1 = append(page1, `{"name":"other","messages_ready":5}`, `{"name":"q12"}`)
	for i := 13; i < 18; i++ { // q18 and q19 do not exist
		page2 = append(page2, fmt.Sprintf(`{"name":"q%d","messages_ready":%d}`, i, i))
	}
	list := "GET /api/queues/%%2F?page=%d&page_size=500&columns=name,messages_ready"
	f, m := newFakeMgmt(t, map[string]string{
		"GET /api/queues/%2F/a?columns=messages_ready":     `{"messages_ready":3}`,
		"GET /api/queues/%2F/fresh?columns=messages_ready": `{}`,
		fmt.Sprintf(list, 1):                               `{"items":[` + strings.Join(page1, ",") + `],"page":1,"page_count":2}`,
		fmt.Sprintf(list, 2):                               `{"items":[` + strings.Join(page2, ",") + `],"page":2,"page_count":2}`,
	})
	p := &rabbitProfile{mgmt: m}
	ctx := context.Background()
	got, err := p.QueueDepths(ctx, []string{"a", "fresh", "gone"})
	if want := map[string]int64{"a": 3, "fresh": -1}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("a few: %v %v, want %v", got, err, want)
	}
	got, err = p.QueueDepths(ctx, many)
	if err != nil || len(got) != 18 || got["q12"] != -1 || got["q17"] != 17 || got["q3"] != 3 {
		t.Fatalf("many: %v %v", got, err)
	}
	if _, ok := got["other"]; ok {
		t.Errorf("a queue not asked for is in the answer: %v", got)
	}
	if _, ok := got["q19"]; ok {
		t.Errorf("a queue that does not exist is in the answer: %v", got)
	}
	if len(f.got) != 5 { // 3 one by one, 2 pages
		t.Errorf("%d calls: %v", len(f.got), f.got)
	}
	if _, err := p.QueueDepth(ctx, "gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a missing queue: %v, want ErrNotFound", err)
	}
}

func TestQpidMsgDepth(t *testing.T) {
	for v, want := range map[any]int64{uint64(7): 7, int64(8): 8, uint32(9): 9, int32(10): 10, "x": -1, nil: -1, uint64(1 << 63): 1 << 62} {
		if got := msgDepth(QMFObject{"msgDepth": v}); got != want {
			t.Errorf("msgDepth(%T %v) = %d, want %d", v, v, got, want)
		}
	}
}
