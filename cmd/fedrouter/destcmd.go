package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fedrouter/fedrouter/adminclient"
	"github.com/fedrouter/fedrouter/globaldest"
)

// destinationCommand is `fedrouter destination list`: the global
// destinations (docs/destinations.md), each with its instance, depth and
// consumers at every broker of its span, and where its messages move.
func destinationCommand() *cli.Command {
	return &cli.Command{
		Name:  "destination",
		Usage: "show the global destinations (destinations: section)",
		Subcommands: []*cli.Command{
			apiCommand("destination", "list", "list the global destinations: state, properties, and at each broker the instance, messages, consumers and where its messages move", "", 0, 0, true, listDestinations),
		},
	}
}

func listDestinations(c *cli.Context, api *adminclient.Client) error {
	st, err := api.Destinations(c.Context)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, st)
	}
	p := newPrinter(c.App.Writer)
	p.table()
	p.println("Destination\tKind\tState\tBroker\tInstance\tMessages\tConsumers\tMessages move to\tProperties")
	for _, d := range st.Destinations {
		flows := map[string]globaldest.Flow{}
		for _, f := range d.Flows {
			flows[f.From] = f
		}
		for i, in := range d.Instances {
			name, kind, state, props := "", "", "", ""
			if i == 0 {
				name, kind, state, props = d.Name, d.Kind, d.State, d.Properties
			}
			if in.Properties != "" {
				props = "differs: " + in.Properties
			}
			depth := fmt.Sprint(in.Messages)
			if in.State == "remote" { // another router's broker: its consumers only
				depth = "-"
			}
			p.printf("%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", name, kind, state, in.Broker, in.State, depth, in.Consumers, flowCell(flows, in.Broker), props)
		}
	}
	p.endTable()
	for _, d := range st.Destinations {
		for _, pr := range d.Problems {
			p.printf("%s: %s\n", d.Name, pr)
		}
	}
	for _, d := range st.Destinations {
		printLimits(p, d)
	}
	brokers := make([]string, 0, len(st.Unlisted))
	for b := range st.Unlisted {
		brokers = append(brokers, b)
	}
	sort.Strings(brokers)
	for _, b := range brokers {
		p.printf("%s cannot be listed: %s\n", b, st.Unlisted[b])
	}
	if len(st.Destinations) == 0 {
		p.println("no global destination yet (none of the entries' queues exists at any broker)")
	}
	p.printf("since the start: %d created, %d deleted, %d kept (held messages), %d failed; %d flows started, %d stopped; %d refused by a limit\n",
		st.Counts.Created, st.Counts.Deleted, st.Counts.Kept, st.Counts.Failed, st.Counts.FlowsStarted, st.Counts.FlowsStopped, st.Counts.LimitRefusals)
	return p.done()
}

// printLimits prints d's limits over all its instances: the total, and
// each broker's share and use.
func printLimits(p *printer, d globaldest.Status) {
	l := d.Limits
	if l == nil {
		return
	}
	held := ""
	if l.Withhold {
		held = "; at the limit: the routes feeding it withhold credit"
	}
	p.printf("%s: limits %s; total %d messages, %s%s; shares changed %s (%s)\n", d.Name, limitsText(l), l.Messages, sizeText(l.Bytes), held,
		l.Changed.Format(time.RFC3339), l.Why)
	if l.Decider != "" {
		p.printf("  shares decided by %s (routers over the span: %s)\n", l.Decider, strings.Join(l.Routers, ", "))
	}
	for _, s := range []string{l.Differs, l.Refused} {
		if s != "" {
			p.printf("  %s\n", s)
		}
	}
	for _, b := range l.Brokers {
		line := fmt.Sprintf("  %s: %d messages", b.Broker, b.Messages)
		if b.ShareMessages > 0 {
			line += fmt.Sprintf(" of a share of %d", b.ShareMessages)
		}
		line += ", " + sizeText(b.Bytes)
		if b.ShareBytes > 0 {
			line += " of a share of " + sizeText(b.ShareBytes)
		}
		if b.Held {
			line += "; routes into it held"
		}
		if b.By != "" {
			line += "; policy put by " + b.By
		}
		if b.Policy != "" {
			line += "; share " + b.Policy
		}
		p.println(line)
	}
}

// limitsText is a destination's limits with the sizes in units:
// "max 10000 messages, max 1.5 MiB, overflow drop-head" (a router that
// gives them as text only: that text).
func limitsText(l *globaldest.LimitsView) string {
	if l.MaxMessages == 0 && l.MaxBytes == 0 && l.Overflow == "" {
		return l.Limits
	}
	var parts []string
	if l.MaxMessages > 0 {
		parts = append(parts, fmt.Sprintf("max %d messages", l.MaxMessages))
	}
	if l.MaxBytes > 0 {
		parts = append(parts, "max "+sizeText(l.MaxBytes))
	}
	if l.MaxProducers > 0 {
		parts = append(parts, fmt.Sprintf("max %d producers (not enforced)", l.MaxProducers))
	}
	if l.Overflow != "" {
		parts = append(parts, "overflow "+l.Overflow)
	}
	return strings.Join(parts, ", ")
}

// flowCell says where broker's messages move, if anywhere: the target,
// how many moved, and how many stayed at their max_hops.
func flowCell(flows map[string]globaldest.Flow, broker string) string {
	f, ok := flows[broker]
	if !ok {
		return "-"
	}
	s := fmt.Sprintf("%s (%d moved", f.To, f.Moved)
	if f.Parked > 0 {
		s += fmt.Sprintf(", %d at max_hops", f.Parked)
	}
	if f.State != "" && f.State != "Operational" {
		s += ", " + f.State
	}
	return s + ")"
}
