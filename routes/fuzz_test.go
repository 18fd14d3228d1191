package routes

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzJournalReplay replays arbitrary bytes as a state file's journal on
// top of a snapshot, as a router does at its start: it must never panic;
// what it accepts holds each route once; and replaying is idempotent —
// replaying the same journal again onto the result changes nothing — the
// property that makes a crash between a snapshot and the journal's
// truncation harmless.
func FuzzJournalReplay(f *testing.F) {
	a := Spec{Kind: KindQueue, Dest: "b", Src: "a", Exchange: "amq.direct", Queue: "orders", Durable: true}
	b := Spec{Kind: KindExchange, Dest: "a", Src: "b", Exchange: "amq.topic", Key: "#", Durable: true}
	line := func(l journalLine) string {
		js, err := json.Marshal(l)
		if err != nil {
			f.Fatal(err)
		}
		return string(js) + "\n"
	}
	addA, addB, delA := line(journalLine{Add: &a}), line(journalLine{Add: &b}), line(journalLine{Del: a.ID()})
	for _, seed := range []string{
		"", addA, addA + addB + delA, delA + addA, addA + addA,
		addA + `{"add":{"kind":"queue","dest":"b"`, // torn last line
		addA + "{}\n" + addB,                       // damage before the last line
		`{"add":{"kind":"queue"},"del":"x"}` + "\n",
		`{"del":""}` + "\n", "\n\n", "null\n",
	} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, withSnapshot bool) {
		var snapshot []Spec
		if withSnapshot {
			snapshot = []Spec{a}
		}
		got, torn, err := replayJournal(snapshot, data)
		if err != nil {
			return
		}
		ids := map[string]Spec{}
		for _, s := range got {
			if _, dup := ids[s.ID()]; dup {
				t.Fatalf("route %s twice after replay", s.ID())
			}
			ids[s.ID()] = s
		}
		again, tornAgain, err := replayJournal(got, data)
		if err != nil || tornAgain != torn || len(again) != len(got) {
			t.Fatalf("replaying again: %d routes (torn %v, %v), first %d (torn %v)", len(again), tornAgain, err, len(got), torn)
		}
		for _, s := range again {
			prev, ok := ids[s.ID()]
			if !ok {
				t.Fatalf("replaying again added route %s", s.ID())
			}
			pj, _ := json.Marshal(prev) // specs from JSON encode: FuzzSpecUnmarshalJSON
			sj, _ := json.Marshal(s)
			if !bytes.Equal(pj, sj) {
				t.Fatalf("replaying again changed route %s:\n%s\n%s", s.ID(), pj, sj)
			}
		}
	})
}
