package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// The comparison table: per pair, size and number of routes, what each
// forwarder moved (msg/s) and what it cost (CPU per message), fedrouter
// first and Qpid Dispatch, the other router, beside it.

// cmpVariant is a column group of the comparison table.
type cmpVariant struct {
	variant string
	name    string
	// process: the forwarder is a process of its own, whose CPU is shown
	// besides the total with the brokers'; a shovel or qpidd's federation
	// runs inside the brokers, so only the total is its cost.
	process bool
}

var cmpVariants = []cmpVariant{
	{vFedrouter, "fedrouter", true},
	{vQdrouterd, "Qpid Dispatch", true},
	{vRaw, "raw pipe", true},
	{vShovel091, "shovel 0-9-1", false},
	{vShovel10, "shovel 1.0", false},
	{vQpidFed, "qpidd federation", false},
}

type cmpKey struct {
	pair         string
	size, routes int
}

// comparison returns the table's header and rows, cells as text (msg/s
// with thousands separators when grouped is set). A variant none of the
// results has gets no columns; a cell a pair cannot have is "-", a case
// without a good run "FAILED".
func comparison(results []*result, grouped bool) ([]string, [][]string) {
	byKey := map[cmpKey]map[string]*result{}
	var keys []cmpKey
	present := map[string]bool{}
	for _, r := range results {
		k := cmpKey{r.Pair, r.Size, r.Routes}
		if byKey[k] == nil {
			byKey[k] = map[string]*result{}
			keys = append(keys, k)
		}
		byKey[k][r.Variant] = r
		present[r.Variant] = true
	}
	var cols []cmpVariant
	for _, v := range cmpVariants {
		if present[v.variant] {
			cols = append(cols, v)
		}
	}
	header := []string{"pair", "size", "routes"}
	for _, v := range cols {
		header = append(header, v.name+" msg/s")
	}
	for _, v := range cols {
		if v.process {
			header = append(header, v.name+" CPU (total)")
		} else {
			header = append(header, v.name+" CPU total")
		}
	}
	withRatios := present[vFedrouter] && present[vQdrouterd]
	if withRatios {
		header = append(header, "fedrouter / Qpid Dispatch msg/s", "fedrouter / Qpid Dispatch CPU")
	}
	var rows [][]string
	for _, k := range keys {
		row := []string{k.pair, sizeName(k.size), strconv.Itoa(k.routes)}
		for _, v := range cols {
			row = append(row, rateCell(byKey[k][v.variant], grouped))
		}
		for _, v := range cols {
			row = append(row, cpuCell(byKey[k][v.variant], v.process))
		}
		if withRatios {
			f := byKey[k][vFedrouter]
			if f == nil {
				row = append(row, "-", "-")
			} else {
				row = append(row, ratioCell(f.VsQdrouterd), ratioCell(f.CPUVsQdrouterd))
			}
		}
		rows = append(rows, row)
	}
	return header, rows
}

func rateCell(r *result, grouped bool) string {
	switch {
	case r == nil:
		return "-"
	case len(r.Runs) == 0:
		return "FAILED"
	case grouped:
		return thousands(int64(r.Rate + 0.5))
	}
	return fmt.Sprintf("%.0f", r.Rate)
}

// cpuCell is CPU in seconds per 100,000 messages: the forwarding
// process's with the total (process and both brokers) in brackets, or
// only the total for a forwarder inside the brokers.
func cpuCell(r *result, process bool) string {
	switch {
	case r == nil:
		return "-"
	case len(r.Runs) == 0:
		return "FAILED"
	case process:
		return fmt.Sprintf("%.2f (%.2f)", r.ProcCPUPer100k, r.ProcCPUPer100k+r.BrokerCPUPer100k)
	}
	return fmt.Sprintf("%.2f", r.BrokerCPUPer100k)
}

func ratioCell(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2fx", *p)
}

// thousands writes n with a comma every three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// tabRows is a table for a tabwriter: every cell ends in a tab.
func tabRows(header []string, rows [][]string) string {
	var b strings.Builder
	for _, r := range append([][]string{header}, rows...) {
		b.WriteString(strings.Join(r, "\t") + "\t\n")
	}
	return b.String()
}

// markdownRows is a table in Markdown, the figures right-aligned.
func markdownRows(header []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for i := range header {
		if i < 3 {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// tableCommand prints a results file's comparison as Markdown (for
// docs/performance.md).
func tableCommand() *cli.Command {
	return &cli.Command{
		Name:      "table",
		Usage:     "print the comparison table of a results file (fedbench run --out) as Markdown",
		ArgsUsage: "RESULTS.json",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("table: want one results file, got %d arguments", c.NArg())
			}
			raw, err := os.ReadFile(c.Args().First())
			if err != nil {
				return err
			}
			var r report
			if err := json.Unmarshal(raw, &r); err != nil {
				return fmt.Errorf("table: %s: %w", c.Args().First(), err)
			}
			h, rows := comparison(r.Results, true)
			_, err = fmt.Fprint(c.App.Writer, markdownRows(h, rows))
			return err
		},
	}
}
