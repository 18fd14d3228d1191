package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/adminclient"
)

// clusterCommand is `fedrouter cluster status`: the members of the router
// cluster as the router asked last read them from the store (alive,
// suspect, failed, left; last heartbeat; routes held; epochs).
func clusterCommand() *cli.Command {
	return &cli.Command{
		Name:  "cluster",
		Usage: "show the router cluster this router is a member of",
		Subcommands: []*cli.Command{
			apiCommand("cluster", "status", "list the cluster's members: state, last heartbeat, routes held, epochs", "", 0, 0, true, clusterStatus),
		},
	}
}

func clusterStatus(c *cli.Context, api *adminclient.Client) error {
	st, err := api.Cluster(c.Context)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, st)
	}
	p := newPrinter(c.App.Writer)
	if !st.Joined {
		p.printf("Cluster %s, member %s: the store has not answered yet (see the router's log)\n", st.Name, st.Self)
		return p.done()
	}
	p.printf("Cluster %s, member %s (heartbeat %s, lease %s): %d members; this one holds %d routes, %d takeovers, %d store errors, last renewal %s\n\n",
		st.Name, st.Self, st.Heartbeat, st.Lease, len(st.Members), st.Metrics.Held, st.Metrics.Takeovers, st.Metrics.StoreErrors, st.Metrics.LastRenewal)
	p.table()
	p.println("Member\tState\tLast beat\tRoutes\tMax epoch\tBrokers\tAdmin")
	for _, m := range st.Members {
		p.printf("%s\t%s\t%s ago\t%d\t%d\t%s\t%s\n", m.ID, m.State, m.BeatAgo, m.Routes, m.MaxEpoch, strings.Join(m.Brokers, ","), m.AdminURL)
	}
	p.endTable()
	return p.done()
}
