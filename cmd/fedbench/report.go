package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// report is everything one `fedbench run` writes as JSON.
type report struct {
	Date     string            `json:"date"`
	Duration string            `json:"duration"`
	Machine  machine           `json:"machine"`
	Versions map[string]string `json:"versions"`
	Options  options           `json:"options"`
	Results  []*result         `json:"results"`
	Backlogs []*backlogResult  `json:"backlogs,omitempty"` // one per data path (--backlog-data-path): the engine
	Topology *topoResult       `json:"topology,omitempty"` // full recompute
	// TopologyUpdate is one changed advertisement up to the updated next
	// hops of 20 origins.
	TopologyUpdate *topoResult    `json:"topology_update,omitempty"`
	Control        *controlResult `json:"control_plane,omitempty"`
}

type machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	MemTotal  string `json:"mem_total"`
	Kernel    string `json:"kernel"`
	OS        string `json:"os"`
	LoadStart string `json:"loadavg_start"`
	LoadEnd   string `json:"loadavg_end"`
}

func newReport(ctx context.Context, b *bench, pairs []pairDef) *report {
	r := &report{
		Date:     time.Now().UTC().Format(time.RFC3339),
		Options:  b.opt,
		Versions: map[string]string{"go": runtime.Version()},
		Machine: machine{
			CPUs: runtime.NumCPU(), CPUModel: procField("/proc/cpuinfo", "model name", ":"),
			MemTotal: procField("/proc/meminfo", "MemTotal", ":"), Kernel: firstLine("/proc/sys/kernel/osrelease"),
			OS: strings.Trim(procField("/etc/os-release", "PRETTY_NAME", "="), `"`), LoadStart: firstLine("/proc/loadavg"),
		},
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/Azure/go-amqp" {
				r.Versions["go-amqp"] = d.Version
			}
		}
	}
	if out, err := exec.Command(b.opt.Fedrouter, "--version").Output(); err == nil {
		r.Versions["fedrouter"] = strings.TrimSpace(string(out))
	}
	for _, p := range pairs {
		if p.Src.mgmt != nil {
			if ov, err := p.Src.mgmt.Overview(ctx); err == nil {
				r.Versions["rabbitmq"], r.Versions["erlang"] = ov.RabbitMQVersion, ov.ErlangVersion
			}
		}
	}
	if len(qpiddNodes(pairs)) > 0 {
		if v := qpiddVersion(ctx); v != "" {
			r.Versions["qpidd"] = v
		}
	}
	if slices.Contains(b.opt.Variants, vQdrouterd) {
		if v := qdrouterdVersion(); v != "" {
			r.Versions["qdrouterd"] = v
		}
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", "libqpid-proton11").Output(); err == nil {
		r.Versions["qpid-proton"] = string(out)
	}
	return r
}

func (r *report) finish(d time.Duration) {
	r.Duration = d.Round(time.Second).String()
	r.Machine.LoadEnd = firstLine("/proc/loadavg")
}

// procField returns the value of the first "key<sep>value" line of path.
func procField(path, key, sep string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }() // read only: closing has nothing to report
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func firstLine(path string) string {
	b, _ := os.ReadFile(path)
	l, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(l)
}

func (r *report) write(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// failures is non-nil when a case failed or a check after it did.
func (r *report) failures() error {
	for _, res := range r.Results {
		if len(res.Errors) > 0 {
			return errFailures
		}
		for _, s := range res.Runs {
			if s.Verified != "ok" {
				return errFailures
			}
		}
	}
	for _, bl := range r.Backlogs {
		if bl.Error != "" || bl.Verified != "ok" {
			return errFailures
		}
	}
	if r.Control != nil && r.Control.Error != "" {
		return errFailures
	}
	return nil
}

// print writes the summary to out in one write: the error is that write's.
func (r *report) print(out io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "\nfedbench %s on %d x %s, %s; loadavg %s -> %s\n", r.Date, r.Machine.CPUs, r.Machine.CPUModel,
		r.Machine.MemTotal, r.Machine.LoadStart, r.Machine.LoadEnd)
	var vs []string
	for k, v := range r.Versions {
		vs = append(vs, k+" "+v)
	}
	slices.Sort(vs)
	fmt.Fprintf(&b, "versions: %s\n", strings.Join(vs, ", "))
	fmt.Fprintf(&b, "medians of %d runs, credit %d; CPU in seconds per 100,000 messages\n\n", r.Options.Reps, r.Options.Credit)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	// Into a bytes.Buffer: neither the tabwriter nor the buffer can fail.
	_, _ = io.WriteString(tw, r.resultRows())
	_ = tw.Flush()
	if h, rows := comparison(r.Results, false); len(rows) > 0 {
		fmt.Fprintf(&b, "\nside by side: msg/s; the router process's CPU (s per 100,000 messages, µs per message), the total with both brokers'; fedrouter's ratios to the others\n\n")
		_, _ = io.WriteString(tw, tabRows(h, rows))
		_ = tw.Flush()
	}
	for _, res := range r.Results {
		for _, e := range res.Retried {
			fmt.Fprintf(&b, "retried: %s: %s\n", res.caseSpec, e)
		}
		for _, e := range res.Errors {
			fmt.Fprintf(&b, "FAILED: %s: %s\n", res.caseSpec, e)
		}
		if n := len(res.Runs); n > 0 && len(res.Runs[n-1].DataPaths) > 0 {
			fmt.Fprintf(&b, "data paths: %s: %s\n", res.caseSpec, strings.Join(res.Runs[n-1].DataPaths, "; "))
		}
	}
	if len(r.Backlogs) > 0 {
		fmt.Fprintln(&b)
	}
	for _, bl := range r.Backlogs {
		if bl.Error != "" {
			fmt.Fprintf(&b, "backlog on %s: FAILED: %s\n", bl.DataPath, bl.Error)
		} else {
			fmt.Fprintf(&b, "backlog on %s: %d x %s filled in %.0f s, drained by one route in %.0f s (%.0f msg/s); router RSS while draining min %.1f / max %.1f / final %.1f MiB (peak VmHWM %.1f MiB, %d samples every 500 ms); verified: %s\n",
				bl.DataPath, bl.Messages, sizeName(bl.Size), bl.FillSeconds, bl.DrainSeconds, bl.Rate,
				kib(bl.RSSMinKiB), kib(bl.RSSMaxKiB), kib(bl.RSSFinalKiB), kib(bl.PeakKiB), len(bl.Samples), bl.Verified)
		}
	}
	for _, tp := range []*topoResult{r.Topology, r.TopologyUpdate} {
		if tp != nil {
			fmt.Fprintf(&b, "topology: %s\n", tp)
		}
	}
	if r.Control != nil {
		fmt.Fprintln(&b)
		r.Control.print(&b)
	}
	_, err := out.Write(b.Bytes())
	return err
}

// resultRows is the results table: a row a case, every cell ending in a
// tab, for a tabwriter.
func (r *report) resultRows() string {
	var b strings.Builder
	fmt.Fprintln(&b, "pair\tsize\troutes\tvariant\tmsg/s\tvs raw\tvs native\tproc CPU\tbroker CPU\ttotal CPU\tpeak RSS MiB\truns\t")
	for _, res := range r.Results {
		ratio := func(p *float64) string {
			if p == nil {
				return "-"
			}
			return fmt.Sprintf("%.2fx", *p)
		}
		proc, rss := fmt.Sprintf("%.2f", res.ProcCPUPer100k), fmt.Sprintf("%.1f", res.PeakRSSMiB)
		if res.Variant == vShovel091 || res.Variant == vShovel10 || res.Variant == vQpidFed {
			proc, rss = "(in broker)", "-"
		}
		if len(res.RouterCPUPer100k) > 1 { // several routers: each, then the sum
			var each []string
			for _, c := range res.RouterCPUPer100k {
				each = append(each, fmt.Sprintf("%.2f", c))
			}
			proc = strings.Join(each, "+") + "=" + proc
		}
		native := res.VsShovel // the broker's own forwarder: the best shovel, or qpidd's federation
		if res.VsQpidFed != nil {
			native = res.VsQpidFed
		}
		ok := 0
		for _, s := range res.Runs {
			if s.Verified == "ok" {
				ok++
			}
		}
		runs := fmt.Sprintf("%d/%d", ok, len(res.Runs)+len(res.Errors))
		if n := len(res.Retried); n > 0 {
			runs += fmt.Sprintf(" (%d retried)", n)
		}
		fmt.Fprintf(&b, "%s\t%s\t%d\t%s\t%.0f\t%s\t%s\t%s\t%.2f\t%.2f\t%s\t%s\t\n", res.Pair, sizeName(res.Size), res.Routes, res.Variant,
			res.Rate, ratio(res.VsRaw), ratio(native), proc, res.BrokerCPUPer100k, res.ProcCPUPer100k+res.BrokerCPUPer100k, rss, runs)
	}
	return b.String()
}

func kib(v int64) float64 { return float64(v) / 1024 }
