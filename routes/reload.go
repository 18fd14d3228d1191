package routes

import (
	"context"
	"fmt"
)

// Subscription says what StopConfigured does with an exchange route's
// subscription at its source.
type Subscription bool

const (
	// DropSubscription: the subscription goes, as with Delete (a route a
	// reload removed).
	DropSubscription Subscription = false
	// KeepSubscription: the subscription stays, so a changed route
	// started again under the same id picks up what it collected
	// meanwhile.
	KeepSubscription Subscription = true
)

// StopConfigured stops a configured route a reload removed or changed
// (the runtime routes' Delete refuses configured ones): it leaves the
// map as a deleted route does, its messages in flight released at the
// source; sub says whether an exchange route's subscription stays.
func (m *Manager) StopConfigured(ctx context.Context, id string, sub Subscription) error {
	m.mu.Lock()
	r, ok := m.routes[id]
	if !ok {
		m.mu.Unlock()
		return fmt.Errorf("%w: id %s", ErrNotFound, id)
	}
	if r.origin != OriginConfig {
		m.mu.Unlock()
		return fmt.Errorf("routes: route %s is not a configured route (origin %s): a reload leaves it", r.spec, r.origin)
	}
	delete(m.routes, id)
	m.edgesAfterLocked(r)
	m.mu.Unlock()
	r.stop()
	if sub == DropSubscription {
		r.unsubscribe(ctx)
	}
	m.log.Info().Str("route", id).Str("spec", r.spec.String()).Msg("configured route stopped (reload)")
	return nil
}

// Origins returns the origin of every route the manager runs, by id: a
// reload plans against them (a configured route may not take the id of
// a runtime one).
func (m *Manager) Origins() map[string]Origin {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]Origin, len(m.routes))
	for id, r := range m.routes {
		out[id] = r.origin
	}
	return out
}
