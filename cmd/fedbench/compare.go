package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// The comparison table: per pair, size and number of routes, a row per
// forwarder — fedrouter on its engine (with and without ack), Qpid
// Dispatch, the raw pipe, the shovels, qpidd's federation — with what it
// moved (msg/s), what it cost (router CPU per message; the total with the
// brokers') and, on fedrouter's rows, its ratios to the others (issue
// 25's targets are such ratios).

// vGoAMQPRemoved is the variant of fedrouter on the go-amqp data path,
// removed on 2026-12-05: results files from before still hold its rows,
// which `fedbench table` shows as they were measured (without the
// ratios over it, which are gone with it).
const vGoAMQPRemoved = "fedrouter"

// cmpVariant is a forwarder of the comparison table.
type cmpVariant struct {
	variant string
	name    string
	// process: the forwarder is a process of its own, whose CPU is shown
	// besides the total with the brokers'; a shovel or qpidd's federation
	// runs inside the brokers, so only the total is its cost.
	process bool
}

// cmpVariants in the table's order.
var cmpVariants = []cmpVariant{
	{vEngineAck, "fedrouter engine, ack", true},
	{vEngine, "fedrouter engine", true},
	{vGoAMQPRemoved, "fedrouter go-amqp", true},
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

// cmpRatio is a ratio column: shown when a run has the forwarder it
// compares with.
type cmpRatio struct {
	header string
	with   []string // the variants compared with: the column is there if one ran
	cell   func(*result) *float64
}

func nativeRatio(r *result) *float64 {
	if r.VsQpidFed != nil {
		return r.VsQpidFed
	}
	return r.VsShovel
}

var cmpRatios = []cmpRatio{
	{"/ Qpid Dispatch msg/s", []string{vQdrouterd}, func(r *result) *float64 { return r.VsQdrouterd }},
	{"/ Qpid Dispatch CPU", []string{vQdrouterd}, func(r *result) *float64 { return r.CPUVsQdrouterd }},
	{"/ raw pipe msg/s", []string{vRaw}, func(r *result) *float64 { return r.VsRaw }},
	{"/ native msg/s", []string{vShovel091, vShovel10, vQpidFed}, nativeRatio},
}

// cmpTextCols is how many columns of the table are text, not figures.
const cmpTextCols = 4

// comparison returns the table's header and rows, cells as text (msg/s
// with thousands separators when grouped is set): a row per forwarder
// that ran on the case, "FAILED" in its cells when it has no good run;
// a ratio column only when the run has the forwarder it compares with.
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
	header := []string{"pair", "size", "routes", "forwarder", "msg/s", "router CPU s/100k", "router µs/msg", "total CPU s/100k"}
	var ratios []cmpRatio
	for _, c := range cmpRatios {
		if slices.ContainsFunc(c.with, func(v string) bool { return present[v] }) {
			ratios = append(ratios, c)
			header = append(header, c.header)
		}
	}
	var rows [][]string
	for _, k := range keys {
		for _, v := range cmpVariants {
			r := byKey[k][v.variant]
			if r == nil {
				continue
			}
			name := v.name
			if r.Ack > 0 {
				name += " " + strconv.Itoa(r.Ack)
			}
			row := append([]string{k.pair, sizeName(k.size), strconv.Itoa(k.routes), name, rateCell(r, grouped)}, cpuCells(r, v.process)...)
			for _, c := range ratios {
				if len(r.Runs) == 0 {
					row = append(row, "-")
				} else {
					row = append(row, ratioCell(c.cell(r)))
				}
			}
			rows = append(rows, row)
		}
	}
	return header, rows
}

func rateCell(r *result, grouped bool) string {
	switch {
	case len(r.Runs) == 0:
		return "FAILED"
	case grouped:
		return thousands(int64(r.Rate + 0.5))
	}
	return fmt.Sprintf("%.0f", r.Rate)
}

// cpuCells are the router's CPU in seconds per 100,000 messages and in
// µs per message, and the total with both brokers' in seconds per
// 100,000: for a forwarder inside the brokers the total only.
func cpuCells(r *result, process bool) []string {
	switch {
	case len(r.Runs) == 0:
		return []string{"FAILED", "FAILED", "FAILED"}
	case process:
		return []string{fmt.Sprintf("%.2f", r.ProcCPUPer100k), fmt.Sprintf("%.1f", r.ProcCPUPer100k*10),
			fmt.Sprintf("%.2f", r.ProcCPUPer100k+r.BrokerCPUPer100k)}
	}
	return []string{"-", "-", fmt.Sprintf("%.2f", r.BrokerCPUPer100k)}
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

// markdownRows is a table in Markdown, the figures (after the first
// textCols columns) right-aligned.
func markdownRows(header []string, rows [][]string, textCols int) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for i := range header {
		if i < textCols {
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
			_, err = fmt.Fprint(c.App.Writer, markdownRows(h, rows, cmpTextCols))
			return err
		},
	}
}
