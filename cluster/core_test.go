package cluster

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/internal/golden"
	"github.com/fedrouter/fedrouter/store"
)

// The core's golden tests: cluster/testdata/*.txt (internal/golden).
// `go test ./cluster -run TestCoreScripts -update` rewrites them. The
// harness plays the store too: its clock is the scripts' (at=), and its
// leases change as claims, beats and releases say.
//
//	params self=A attached=a,b local=a [hb=2s lease=6s suspect=3]
//	member id=B beat=0s brokers=a,b local=b [left]   a member's row
//	route id=r1 src=a dest=b [push] [remote]         a route definition (free)
//	lease id=r1 owner=B epoch=1 until=6s | lease id=r1 free
//	delete id=r1                                      the definition goes
//	observe at=5s | tick at=5s | beatfail at=5s | leaving
//	beat at=5s sent=4s        the store renews what the core asks, if still its
//	claim at=5s sent=5s       the store grants what the last Claim asked, if free
//	released id=r1            a handoff's release came back
//	holds at=5s               the routes the data plane may forward on
//	changes at=5s             which routes an admin change would be refused for (InTakeover)
func TestCoreScripts(t *testing.T) {
	golden.RunDir(t, "testdata", func(t *testing.T) golden.Runner {
		return (&coreHarness{routes: map[string]*RouteView{}, members: map[string]*store.MemberRow{}}).run
	})
}

func TestCoreScriptsRoundTrip(t *testing.T) { golden.CheckRoundTrip(t, "testdata") }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type coreHarness struct {
	c       *Core
	p       Params
	members map[string]*store.MemberRow
	routes  map[string]*RouteView
	asked   []string // the last Claim action's routes
}

func (h *coreHarness) run(line string) (string, error) {
	cmd, kv, words := golden.Args(line)
	at, err := h.time(kv, "at")
	if err != nil {
		return "", err
	}
	var acts []Action
	switch cmd {
	case "params":
		return "", h.params(kv)
	case "member":
		return "", h.member(kv, words)
	case "route":
		h.routes[kv["id"]] = &RouteView{RouteRow: store.RouteRow{RouteDef: store.RouteDef{ID: kv["id"]}}, Src: kv["src"], Dest: kv["dest"],
			Push: slices.Contains(words, "push"), Remote: slices.Contains(words, "remote")}
		return "", nil
	case "lease":
		return "", h.lease(kv, words)
	case "delete":
		delete(h.routes, kv["id"])
		return "", nil
	case "observe":
		acts = h.c.Observe(at, h.view(at))
	case "tick":
		acts = h.c.Tick(at)
	case "beatfail":
		acts = h.c.BeatFailed(at, errors.New("store: unavailable: connection refused"))
	case "leaving":
		acts = h.c.Leaving()
	case "beat":
		sent, err := h.time(kv, "sent")
		if err != nil {
			return "", err
		}
		acts = h.c.Beaten(sent, h.renew(sent))
	case "claim":
		sent, err := h.time(kv, "sent")
		if err != nil {
			return "", err
		}
		acts = h.c.Claimed(sent, h.grant(sent))
	case "released":
		h.c.Released(kv["id"])
		if r := h.routes[kv["id"]]; r != nil {
			r.Owner, r.Until = "", time.Time{}
		}
		return "", nil
	case "changes":
		return h.changes(at), nil
	case "holds":
		var ids []string
		for id := range h.routes {
			if h.c.Holds(id, at) {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		return "holds " + strings.Join(ids, ","), nil
	default:
		return "", fmt.Errorf("unknown command %q", cmd)
	}
	return h.format(acts), nil
}

// changes is InTakeover for every route at the store's time now.
func (h *coreHarness) changes(now time.Time) string {
	v := h.view(now)
	var lines []string
	for _, r := range v.Routes {
		if t, ok := h.p.InTakeover(r.RouteRow, v.Members, now); ok {
			lines = append(lines, "refuse "+t.String())
		} else {
			lines = append(lines, "allow "+r.ID)
		}
	}
	return strings.Join(lines, "\n")
}

func (h *coreHarness) format(acts []Action) string {
	var lines []string
	for _, a := range acts {
		if a.Kind == Claim {
			h.asked = a.Routes
		}
		lines = append(lines, a.String())
	}
	if len(lines) == 0 {
		return "ok"
	}
	return strings.Join(lines, "\n")
}

func (h *coreHarness) time(kv map[string]string, key string) (time.Time, error) {
	if kv[key] == "" {
		return time.Time{}, nil
	}
	d, err := time.ParseDuration(kv[key])
	return t0.Add(d), err
}

func (h *coreHarness) params(kv map[string]string) error {
	h.p = Params{Self: kv["self"], Heartbeat: 2 * time.Second, SuspectAfter: 3, Lease: 6 * time.Second,
		Attached: list(kv["attached"]), Local: list(kv["local"])}
	for key, dst := range map[string]*time.Duration{"hb": &h.p.Heartbeat, "lease": &h.p.Lease} {
		if kv[key] != "" {
			d, err := time.ParseDuration(kv[key])
			if err != nil {
				return err
			}
			*dst = d
		}
	}
	if kv["suspect"] != "" {
		if _, err := fmt.Sscan(kv["suspect"], &h.p.SuspectAfter); err != nil {
			return err
		}
	}
	h.c = NewCore(h.p)
	return nil
}

func (h *coreHarness) member(kv map[string]string, words []string) error {
	beat, err := h.time(kv, "beat")
	if err != nil {
		return err
	}
	h.members[kv["id"]] = &store.MemberRow{Member: store.Member{ID: kv["id"], Brokers: list(kv["brokers"]), Local: list(kv["local"])},
		LastBeat: beat, Left: slices.Contains(words, "left")}
	return nil
}

func (h *coreHarness) lease(kv map[string]string, words []string) error {
	r := h.routes[kv["id"]]
	if r == nil {
		return fmt.Errorf("no route %q", kv["id"])
	}
	if slices.Contains(words, "free") {
		r.Owner, r.Until = "", time.Time{}
		return nil
	}
	until, err := h.time(kv, "until")
	if err != nil {
		return err
	}
	r.Owner, r.Until = kv["owner"], until
	_, err = fmt.Sscan(kv["epoch"], &r.Epoch)
	return err
}

func (h *coreHarness) view(now time.Time) View {
	v := View{Now: now}
	for _, id := range sortedKeys(h.members) {
		v.Members = append(v.Members, *h.members[id])
	}
	for _, id := range sortedKeys(h.routes) {
		v.Routes = append(v.Routes, *h.routes[id])
	}
	return v
}

// renew is the store's side of a beat sent at sent: the member's row is
// beaten, and each lease still its own with that epoch (expired or not:
// nobody took it) runs a lease more.
func (h *coreHarness) renew(sent time.Time) store.Renewal {
	h.members[h.p.Self] = &store.MemberRow{Member: store.Member{ID: h.p.Self, Brokers: h.p.Attached, Local: h.p.Local}, LastBeat: sent}
	out := store.Renewal{Now: sent}
	for _, l := range h.c.Held() {
		r := h.routes[l.Route]
		if r != nil && r.Owner == h.p.Self && r.Epoch == l.Epoch { // expired but not taken: renewed too
			r.Until = sent.Add(h.p.Lease)
			out.Held = append(out.Held, store.Lease{Route: l.Route, Epoch: l.Epoch, Until: r.Until})
		}
	}
	return out
}

// grant is the store's side of the last Claim: each route free or expired
// at sent goes to the member at epoch + 1.
func (h *coreHarness) grant(sent time.Time) []store.Lease {
	var won []store.Lease
	for _, id := range h.asked {
		r := h.routes[id]
		if r == nil || r.Held(sent) {
			continue
		}
		r.Owner, r.Epoch, r.Until = h.p.Self, r.Epoch+1, sent.Add(h.p.Lease)
		won = append(won, store.Lease{Route: id, Epoch: r.Epoch, Until: r.Until})
	}
	h.asked = nil
	return won
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
