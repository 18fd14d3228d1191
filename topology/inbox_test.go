package topology

import (
	"fmt"
	"testing"
)

func rcv(router string, instance int64, seq uint64, from string) Received {
	return Received{Origin: Origin{router, instance, seq}, Data: []byte(fmt.Sprintf("%s/%d#%d", router, instance, seq)), From: from}
}

func takeAll(q *Inbox) []string {
	var out []string
	for {
		r, ok := q.Take()
		if !ok {
			return out
		}
		out = append(out, string(r.Data)+"@"+r.From)
	}
}

// One slot per origin: the newest advertisement of a router waits in it,
// in the order the slot was first filled; copies and older ones cannot
// push it out; a full inbox refuses new origins and keeps what it holds.
func TestInboxSlotPerOrigin(t *testing.T) {
	q := NewInbox(2)
	steps := []struct {
		r    Received
		want Offered
	}{
		{rcv("r2", 1, 5, "a"), Queued},
		{rcv("r3", 1, 1, "a"), Queued},
		{rcv("r2", 1, 5, "b"), Older},    // the same one again (a re-flood, a replay)
		{rcv("r2", 1, 4, "b"), Older},    // older
		{rcv("r4", 9, 9, "a"), Full},     // a third origin: no slot
		{rcv("r2", 1, 6, "b"), Replaced}, // newer: replaces, keeps its place
		{rcv("r3", 2, 1, "b"), Replaced}, // a restart: newer whatever the seq
		{rcv("r3", 1, 9, "a"), Older},    // the previous instance
	}
	for i, s := range steps {
		if got := q.Offer(s.r); got != s.want {
			t.Fatalf("step %d (%s): %v, want %v", i, s.r.Data, got, s.want)
		}
	}
	if q.Len() != 2 {
		t.Fatalf("len %d", q.Len())
	}
	got := fmt.Sprint(takeAll(q))
	if want := "[r2/1#6@b r3/2#1@b]"; got != want {
		t.Fatalf("took %s, want %s", got, want)
	}
	// Taken, a slot is free again, for the same origin or another.
	if q.Offer(rcv("r4", 9, 9, "a")) != Queued || q.Offer(rcv("r2", 1, 1, "a")) != Queued {
		t.Fatal("slots not freed by Take")
	}
	if got := fmt.Sprint(takeAll(q)); got != "[r4/9#9@a r2/1#1@a]" {
		t.Fatalf("took %s", got)
	}
}

// Thousands of copies of one router's advertisement, and advertisements
// of as many routers as there are slots, never push out the one waiting
// from a router that has its slot.
func TestInboxFloodKeepsValid(t *testing.T) {
	q := NewInbox(8)
	q.Offer(rcv("real", 1, 7, "a"))
	for i := 0; i < 10000; i++ {
		q.Offer(rcv("real", 1, uint64(i%7), "b"))
		q.Offer(rcv(fmt.Sprintf("other%d", i), 1, 1, "b"))
	}
	r, ok := q.Take()
	if !ok || r.Origin != (Origin{"real", 1, 7}) || r.From != "a" {
		t.Fatalf("first taken %+v %v", r, ok)
	}
	if n := len(takeAll(q)); n != 7 {
		t.Fatalf("%d more taken, want the 7 other slots", n)
	}
}
