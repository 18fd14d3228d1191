package topology

// MaxNamed bounds the brokers a node remembers as named (Ready.Named):
// a broker name is at most MaxNameLen bytes, so the set stays under a few
// MB whatever the network advertises over a long run. Past it, further
// names are not remembered (the counter NamedDropped says how many): a
// route towards one of them is refused as if never named, and is added
// with force.
const MaxNamed = 16384

// noteNamed remembers the brokers an accepted LSA (or our own state)
// names — those it is attached to and both ends of its links — and puts
// the ones named for the first time since the node started in r.Named.
// Names are never forgotten while the node runs: a broker whose router
// has gone away was still named, and a route towards it waits rather
// than being refused as a typing mistake.
func (n *Node) noteNamed(brokers []BrokerState, links []Link, r *Ready) {
	if n.named == nil {
		n.named = map[string]struct{}{}
	}
	note := func(b string) {
		if _, ok := n.named[b]; ok {
			return
		}
		if len(n.named) >= MaxNamed {
			n.counters.NamedDropped++
			return
		}
		n.named[b] = struct{}{}
		r.Named = append(r.Named, b)
	}
	for _, b := range brokers {
		note(b.Name)
	}
	for _, k := range links {
		note(k.From)
		note(k.To)
	}
}
