package router

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/internal/group"
	"github.com/fedrouter/fedrouter/topology"
)

// DestinationsExt is the advertisement extension listing the destinations
// this router advertises at its brokers: {"<broker>": ["<queue>", ...]}.
const DestinationsExt = "destinations"

// destPoll is how often the brokers' destinations are listed.
const destPoll = 5 * time.Second

// destWatcher lists the destinations of every broker that can tell (the
// RabbitMQ management API) and runs them through topology.Destinations
// (Open MQ's rules for what to advertise). One goroutine (run), in a group
// owned by the watcher: started by start under the router's context,
// stopped and waited for by stop. The topology driver reads the result
// through current.
type destWatcher struct {
	listers map[string]amqp.DestinationLister
	table   *topology.Destinations // owned by run
	seen    map[string]map[string]topology.DestKind
	shared  *listings // listings the global destinations made (may be nil)
	log     zerolog.Logger

	mu  sync.Mutex
	ext json.RawMessage // guarded by mu: the advertised set, encoded

	g *group.Group // run's; set by start
}

func newDestWatcher(listers map[string]amqp.DestinationLister, idle time.Duration, shared *listings, log zerolog.Logger) *destWatcher {
	return &destWatcher{listers: listers, table: topology.NewDestinations(idle), seen: map[string]map[string]topology.DestKind{}, shared: shared,
		log: log.With().Str("subsystem", "destinations").Logger()}
}

// start runs the watcher under ctx (the router's). Call it once.
func (w *destWatcher) start(ctx context.Context) {
	w.g = group.New(ctx)
	w.g.Go(w.run)
}

// stop stops run and waits for it.
func (w *destWatcher) stop() {
	w.g.Stop()
}

// current returns the advertised destinations, encoded, or nil.
func (w *destWatcher) current() json.RawMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ext
}

func (w *destWatcher) run(ctx context.Context) {
	t := time.NewTicker(destPoll)
	defer t.Stop()
	for {
		w.poll(ctx, time.Now())
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// poll lists every broker and feeds the rules; a broker that cannot be
// listed keeps what it had (no false withdrawals during an outage).
func (w *destWatcher) poll(ctx context.Context, now time.Time) {
	changed := w.table.Tick(now)
	names := make([]string, 0, len(w.listers))
	for b := range w.listers {
		names = append(names, b)
	}
	sort.Strings(names)
	for _, b := range names {
		dests, err := w.list(ctx, b, now)
		if err != nil {
			w.log.Debug().Err(err).Str("broker", b).Msg("cannot list destinations")
			continue
		}
		changed = w.observe(b, dests, now) || changed
	}
	if changed {
		w.publish()
	}
}

// list lists broker b's destinations, or takes the global destinations'
// listing of it when it is fresh.
func (w *destWatcher) list(ctx context.Context, b string, now time.Time) ([]amqp.DestinationInfo, error) {
	if w.shared != nil {
		if qs, ok := w.shared.fresh(b, destPoll, now); ok {
			return amqp.DestinationsOf(qs), nil
		}
	}
	lctx, cancel := context.WithTimeout(ctx, destPoll)
	defer cancel()
	return w.listers[b].Destinations(lctx)
}

// observe feeds one broker's listing, and deletions of what is gone.
func (w *destWatcher) observe(broker string, dests []amqp.DestinationInfo, now time.Time) bool {
	changed := false
	present := map[string]topology.DestKind{}
	for _, d := range dests {
		kind := topology.DestAutoCreated
		switch {
		case d.Temporary:
			kind = topology.DestTemporary
		case d.Configured:
			kind = topology.DestConfigured
		}
		present[d.Name] = kind
		changed = w.table.Observe(topology.DestObservation{Broker: broker, Name: d.Name, Kind: kind,
			Consumers: d.Consumers, Messages: d.Messages}, now) || changed
	}
	for name := range w.seen[broker] {
		if _, ok := present[name]; !ok {
			changed = w.table.Observe(topology.DestObservation{Broker: broker, Name: name, Deleted: true}, now) || changed
		}
	}
	w.seen[broker] = present
	return changed
}

func (w *destWatcher) publish() {
	adv := w.table.Advertised()
	var ext json.RawMessage
	if len(adv) > 0 {
		ext, _ = json.Marshal(adv) // a map of string slices always encodes
	}
	w.mu.Lock()
	w.ext = ext
	w.mu.Unlock()
	w.log.Debug().Str("advertised", string(ext)).Msg("destinations changed")
}
