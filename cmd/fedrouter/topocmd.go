package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/adminclient"
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

func showTopology(c *cli.Context, api *adminclient.Client) error {
	snap, err := api.Topology(c.Context)
	if err != nil {
		return err
	}
	out := c.App.Writer
	switch {
	case c.Bool("json"):
		return printJSON(out, snap)
	case c.Bool("dot"):
		_, err := io.WriteString(out, snap.DOT())
		return err
	}
	fmt.Fprintf(out, "Router %s: %d routers, %d brokers, %d links, radius %d\n\n", snap.Router, len(snap.Routers), len(snap.Brokers), len(snap.Links), snap.Radius)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "Router\tInstance\tSeq\tAge\tFrom")
	for _, r := range snap.Routers {
		from := orDash(r.From)
		if r.Self {
			from = "(self)"
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\n", r.Router, r.Instance, r.Seq, age(r.Age), from)
	}
	w.Flush()
	fmt.Fprintln(out)
	printTopoLinks(out, snap.Links)
	fmt.Fprintln(out)
	printNextHops(out, snap.Routes)
	printDemand(out, snap.Routers)
	printDestinations(out, snap.Routers)
	printExchangeRoutes(out, snap.Routers)
	return nil
}

// printExchangeRoutes lists the exchange routes each router advertises for
// fan-out (docs/multihop.md), grouped as the groups fan out: by exchange
// and key.
func printExchangeRoutes(out io.Writer, routers []topology.RouterView) {
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
	fmt.Fprintln(out, "\nExchange routes (advertised for fan-out):")
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "Exchange\tKey\tGroup\tRoute\tRouter")
	for _, r := range rows {
		fmt.Fprint(w, r.line)
	}
	w.Flush()
}

// printDestinations lists the destinations each router advertises at its
// brokers (Open MQ's rules: docs/dynamic-routes.md).
func printDestinations(out io.Writer, routers []topology.RouterView) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	rows := 0
	for _, rv := range routers {
		var d map[string][]string
		if json.Unmarshal(rv.Ext[router.DestinationsExt], &d) != nil {
			continue
		}
		for _, b := range sortedKeys(d) {
			if rows == 0 {
				fmt.Fprintln(out, "\nDestinations (advertised):")
				fmt.Fprintln(w, "Router\tBroker\tDestinations")
			}
			rows++
			fmt.Fprintf(w, "%s\t%s\t%s\n", rv.Router, b, strings.Join(d[b], " "))
		}
	}
	w.Flush()
}

// printDemand lists the demand each router advertises: the binding keys
// of consumers at its dynamic routes' destinations.
func printDemand(out io.Writer, routers []topology.RouterView) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	rows := 0
	for _, rv := range routers {
		var d map[string]map[string][]string
		if json.Unmarshal(rv.Ext[router.DemandExt], &d) != nil {
			continue
		}
		for _, b := range sortedKeys(d) {
			for _, ex := range sortedKeys(d[b]) {
				if rows == 0 {
					fmt.Fprintln(out, "\nDemand (advertised):")
					fmt.Fprintln(w, "Router\tBroker\tExchange\tKeys")
				}
				rows++
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", rv.Router, b, ex, strings.Join(d[b][ex], " "))
			}
		}
	}
	w.Flush()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func printTopoLinks(out io.Writer, links []topology.LinkView) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "From\tTo\tCost\tState\tRouter\tAge")
	for _, l := range links {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", l.From, l.To, l.Cost, l.State, l.Router, age(l.Age))
	}
	w.Flush()
}

// printNextHops prints the table like qdstat -n: from each broker, each
// reachable destination, its next hop, cost and hops.
func printNextHops(out io.Writer, routes []topology.BrokerRoutes) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "From\tDest\tNext Hop\tCost\tHops\tEqual-cost Next Hops")
	for _, br := range routes {
		for _, r := range br.Routes {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%v\n", br.Broker, r.Dest, r.NextHop, r.Cost, r.Hops, r.NextHops)
		}
	}
	w.Flush()
}

// printMapNextHops adds the shortest paths to `route map` when the router
// floods link state; a router without it just has none to show.
func printMapNextHops(c *cli.Context, api *adminclient.Client) error {
	snap, err := api.Topology(c.Context)
	var ae *adminclient.Error
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(c.App.Writer, "\nNext hops (link state):")
	printNextHops(c.App.Writer, snap.Routes)
	return nil
}

func age(d time.Duration) string { return d.Round(time.Second).String() }
