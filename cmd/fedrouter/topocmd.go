package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/adminclient"
	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/router"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// topologyCommand is `fedrouter topology`: the link-state view of a running
// router — routers heard, links with cost, state, originator and age, and
// the next hops from every broker (what qdstat -n shows).
func topologyCommand() *cli.Command {
	cmd := apiCommand("", "topology", "show the federation graph and the next hops from every broker", "", 0, 0, true, showTopology)
	cmd.Flags = append(cmd.Flags, &cli.BoolFlag{Name: "dot", Usage: "print the graph as Graphviz DOT"})
	return cmd
}

func showTopology(c *cli.Context, client *adminclient.Client) error {
	snap, err := client.Topology(c.Context)
	if err != nil {
		return err
	}
	out := c.App.Writer
	if c.Bool("json") {
		return printJSON(out, snap)
	}
	p := newPrinter(out)
	if c.Bool("dot") {
		p.printf("%s", snap.DOT())
		return p.done()
	}
	p.printf("Router %s: %d routers, %d brokers, %d links, radius %d\n\n", snap.Router, len(snap.Routers), len(snap.Brokers), len(snap.Links), snap.Radius)
	printRouters(p, snap.Routers)
	p.println("")
	printTopoLinks(p, snap.Links)
	p.println("")
	printNextHops(p, snap.Routes)
	printDemand(p, snap.Routers)
	printDestinations(p, snap.Routers)
	printExchangeRoutes(p, snap.Routers)
	return p.done()
}

// printRouters lists the routers heard: their instance, sequence number,
// age and the router they were heard from.
func printRouters(p *printer, routers []topology.RouterView) {
	p.table()
	p.println("Router\tInstance\tSeq\tAge\tFrom")
	for _, r := range routers {
		from := orDash(r.From)
		if r.Self {
			from = "(self)"
		}
		p.printf("%s\t%d\t%d\t%s\t%s\n", r.Router, r.Instance, r.Seq, age(r.Age), from)
	}
	p.endTable()
}

// printExchangeRoutes lists the exchange routes each router advertises for
// fan-out (docs/multihop.md), grouped as the groups fan out: by exchange
// and key.
func printExchangeRoutes(p *printer, routers []topology.RouterView) {
	type row struct{ group, line string }
	var rows []row
	for _, rv := range routers {
		var es []routes.ExchangeEdge
		if json.Unmarshal(rv.Ext[router.ExchangeRoutesExt], &es) != nil {
			continue
		}
		for _, e := range es {
			rows = append(rows, row{e.Exchange + "\x00" + e.Key, fmt.Sprintf("%s\t%s\t%s\t%s > %s\t%s\n", e.Exchange, orDash(e.Key), e.Group(), e.Src, e.Dest, rv.Router)})
		}
	}
	if len(rows) == 0 {
		return
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].group+rows[i].line < rows[j].group+rows[j].line })
	p.println("\nExchange routes (advertised for fan-out):")
	p.table()
	p.println("Exchange\tKey\tGroup\tRoute\tRouter")
	for _, r := range rows {
		p.printf("%s", r.line)
	}
	p.endTable()
}

// printDestinations lists the destinations each router advertises at its
// brokers (Open MQ's rules: docs/dynamic-routes.md).
func printDestinations(p *printer, routers []topology.RouterView) {
	rows := 0
	for _, rv := range routers {
		var d map[string][]string
		if json.Unmarshal(rv.Ext[router.DestinationsExt], &d) != nil {
			continue
		}
		for _, b := range sortedKeys(d) {
			if rows == 0 {
				p.println("\nDestinations (advertised):")
				p.table()
				p.println("Router\tBroker\tDestinations")
			}
			rows++
			p.printf("%s\t%s\t%s\n", rv.Router, b, strings.Join(d[b], " "))
		}
	}
	p.endTable()
}

// printDemand lists the demand each router advertises: the binding keys
// of consumers at its dynamic routes' destinations.
func printDemand(p *printer, routers []topology.RouterView) {
	rows := 0
	for _, rv := range routers {
		var d map[string]map[string][]string
		if json.Unmarshal(rv.Ext[router.DemandExt], &d) != nil {
			continue
		}
		for _, b := range sortedKeys(d) {
			for _, ex := range sortedKeys(d[b]) {
				if rows == 0 {
					p.println("\nDemand (advertised):")
					p.table()
					p.println("Router\tBroker\tExchange\tKeys")
				}
				rows++
				p.printf("%s\t%s\t%s\t%s\n", rv.Router, b, ex, strings.Join(d[b][ex], " "))
			}
		}
	}
	p.endTable()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func printTopoLinks(p *printer, links []topology.LinkView) {
	p.table()
	p.println("From\tTo\tCost\tState\tRouter\tAge")
	for _, l := range links {
		p.printf("%s\t%s\t%d\t%s\t%s\t%s\n", l.From, l.To, l.Cost, l.State, l.Router, age(l.Age))
	}
	p.endTable()
}

// printNextHops prints the table like qdstat -n: from each broker, each
// reachable destination, its next hop, cost and hops.
func printNextHops(p *printer, routes []topology.BrokerRoutes) {
	p.table()
	p.println("From\tDest\tNext Hop\tCost\tHops\tEqual-cost Next Hops")
	for _, br := range routes {
		for _, r := range br.Routes {
			p.printf("%s\t%s\t%s\t%d\t%d\t%v\n", br.Broker, r.Dest, r.NextHop, r.Cost, r.Hops, r.NextHops)
		}
	}
	p.endTable()
}

// printMapNextHops adds the shortest paths to `route map` when the router
// floods link state; a router without it just has none to show.
func printMapNextHops(c *cli.Context, client *adminclient.Client, p *printer) error {
	snap, err := client.Topology(c.Context)
	var ae *adminclient.Error
	if errors.As(err, &ae) && ae.Code == api.CodeOff {
		return nil
	}
	if err != nil {
		return err
	}
	p.println("\nNext hops (link state):")
	printNextHops(p, snap.Routes)
	return nil
}

func age(d time.Duration) string { return d.Round(time.Second).String() }
