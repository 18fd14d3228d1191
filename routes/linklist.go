package routes

import (
	"sort"

	"github.com/fedrouter/fedrouter/amqp"
)

// The links the routes run over (qpid-route's link list), and those the
// router holds besides (links: in the configuration, link add).

// SetLinks replaces the links the router holds besides its routes'
// (Options.Links): the configured ones and those added at runtime.
func (m *Manager) SetLinks(pairs [][2]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.opts.Links = pairs
}

// Links returns the links the routes run over, one per (src, dest) pair:
// Operational only while both brokers' connections are.
func (m *Manager) Links() []LinkStatus {
	count := map[[2]string]int{}
	for _, st := range m.List() {
		count[[2]string{st.Spec.Src, st.Spec.Dest}]++
	}
	m.mu.Lock()
	held := m.opts.Links
	m.mu.Unlock()
	for _, l := range held {
		count[l] += 0
	}
	transit := map[[2]string][]TransitStatus{}
	for _, t := range m.Transit() {
		k := [2]string{t.Broker, t.Via}
		if t.Dest == "" {
			k[1] = ""
		} else {
			count[k] += 0
		}
		transit[k] = append(transit[k], t)
	}
	out := make([]LinkStatus, 0, len(count)+len(transit))
	for pair, n := range count {
		ls := LinkStatus{Src: pair[0], Dest: pair[1], Routes: n, State: StateOperational, Transit: transit[pair]}
		if _, attached := m.opts.Brokers[pair[1]]; !attached {
			m.remoteLink(&ls)
			out = append(out, ls)
			continue
		}
		m.linkState(&ls, pair[:]...)
		out = append(out, ls)
	}
	for pair, ts := range transit {
		if pair[1] == "" { // the broker's ingress
			ls := LinkStatus{Src: pair[0], Ingress: true, State: StateOperational, Transit: ts}
			m.linkState(&ls, pair[0])
			out = append(out, ls)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Src != out[j].Src {
			return out[i].Src < out[j].Src
		}
		return out[i].Dest < out[j].Dest
	})
	return out
}

// linkState sets ls's state from its brokers' connections.
func (m *Manager) linkState(ls *LinkStatus, brokers ...string) {
	for _, name := range brokers {
		st, _ := m.opts.Brokers[name].Conn.Status()
		if st.State != amqp.Operational {
			ls.State = State(st.State.String())
			if st.LastError != nil {
				ls.LastError = name + ": " + st.LastError.Error()
			}
			return
		}
	}
}

// remoteLink fills in the state of a link to a broker this router is not
// attached to: Operational while the source is and the table has a path.
func (m *Manager) remoteLink(ls *LinkStatus) {
	if st, _ := m.opts.Brokers[ls.Src].Conn.Status(); st.State != amqp.Operational {
		ls.State = State(st.State.String())
		if st.LastError != nil {
			ls.LastError = ls.Src + ": " + st.LastError.Error()
		}
		return
	}
	p, _ := m.opts.Table.Paths()
	path := []string(nil)
	if p != nil {
		path = p.Path(ls.Src, ls.Dest)
	}
	if path == nil {
		ls.State, ls.LastError = StateWaiting, "no path to "+ls.Dest+" in the link-state table"
		return
	}
	ls.Via = path[1 : len(path)-1]
}
