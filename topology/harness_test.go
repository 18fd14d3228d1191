package topology

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The script commands (see testdata/*.txt):
//
//	new router=r1 instance=100 [refresh=30s maxage=90s min=1s spf=0s jitter=0.25 rand=0.5,0.1
//	    skew=30s remember=4096]
//	time 10s | time +5s                      set the clock (absolute, or relative)
//	local brokers=a:up,b:down links=a>b:1:up,a<>c:2
//	recv from=b router=r2 instance=1 seq=3 brokers=... links=... [v=2]
//	     [signed=10s] (its signed time, from the script's start; default: now)
//	     [secret=other | unsigned | tamper | oversize | garbage]
//	apply ...same as recv, through Apply instead of the wire...
//	tick [10s | +5s]
//	run until=2m                             tick at every NextTick up to until
//	next | table | counters | peers b | routers | remembered | dot | snapshot
//	alt a c avoid=a>b,b>c
//
// Broker states: up = Operational, down = Failed, anything else as is.
// Links: from>to[:cost[:up|down]], cost 1 and up by default; <> for both
// directions.

var (
	t0         = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	testSecret = []byte("a network secret for the tests")
)

type harness struct {
	t   *testing.T
	n   *Node
	now time.Time
}

func (h *harness) run(line string) (string, error) {
	cmd, kv, words := args(line)
	switch cmd {
	case "new":
		return h.new(kv)
	case "time":
		return "", h.setTime(words)
	}
	if h.n == nil {
		return "", fmt.Errorf("no node yet: start with new")
	}
	switch cmd {
	case "local":
		return h.local(kv)
	case "recv", "apply":
		return h.recv(cmd, kv, words)
	case "tick":
		if err := h.setTime(words); err != nil {
			return "", err
		}
		return h.ready(h.n.Tick(h.now)), nil
	case "run":
		return h.runUntil(kv)
	case "alt":
		return h.alt(kv, words)
	}
	return h.view(cmd, words)
}

func (h *harness) new(kv map[string]string) (string, error) {
	cfg := Config{RouterID: kv["router"], Secret: testSecret}
	var err error
	if cfg.Instance, err = strconv.ParseInt(kv["instance"], 10, 64); err != nil {
		return "", err
	}
	durations := map[string]*time.Duration{
		"refresh": &cfg.Refresh, "maxage": &cfg.MaxAge, "min": &cfg.MinOriginate, "spf": &cfg.SPFDelay,
		"skew": &cfg.MaxSkew,
	}
	for k, d := range durations {
		if v, ok := kv[k]; ok {
			if *d, err = time.ParseDuration(v); err != nil {
				return "", err
			}
		}
	}
	if v, ok := kv["jitter"]; ok {
		if cfg.Jitter, err = strconv.ParseFloat(v, 64); err != nil {
			return "", err
		}
	}
	if v, ok := kv["remember"]; ok {
		if cfg.MaxRemembered, err = strconv.Atoi(v); err != nil {
			return "", err
		}
	}
	if v, ok := kv["rand"]; ok {
		if cfg.Rand, err = cycle(v); err != nil {
			return "", err
		}
	}
	h.now = t0
	h.n, err = New(cfg)
	return "", err
}

// cycle returns a Rand that repeats the given values.
func cycle(list string) (func() float64, error) {
	var vals []float64
	for _, s := range strings.Split(list, ",") {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	i := 0
	return func() float64 { v := vals[i%len(vals)]; i++; return v }, nil
}

func (h *harness) setTime(words []string) error {
	if len(words) == 0 {
		return nil
	}
	s, rel := strings.CutPrefix(words[0], "+")
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if rel {
		h.now = h.now.Add(d)
	} else {
		h.now = t0.Add(d)
	}
	return nil
}

func (h *harness) local(kv map[string]string) (string, error) {
	bs, err := parseBrokers(kv["brokers"])
	if err != nil {
		return "", err
	}
	ls, err := parseLinks(kv["links"])
	if err != nil {
		return "", err
	}
	r, err := h.n.SetLocal(bs, ls, h.now)
	if err != nil {
		return "error: " + err.Error(), nil
	}
	return h.ready(r), nil
}

func (h *harness) recv(cmd string, kv map[string]string, words []string) (string, error) {
	l, err := parseLSA(kv)
	if err != nil {
		return "", err
	}
	l.Time = h.now.UnixNano()
	if v, ok := kv["signed"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return "", err
		}
		l.Time = t0.Add(d).UnixNano()
	}
	if cmd == "apply" {
		return h.ready(h.n.Apply(l, kv["from"], h.now)), nil
	}
	data, err := wire(l, kv, words)
	if err != nil {
		return "", err
	}
	return h.ready(h.n.Receive(data, kv["from"], h.now)), nil
}

// wire encodes an LSA for recv, damaged as the words ask.
func wire(l LSA, kv map[string]string, words []string) ([]byte, error) {
	secret := testSecret
	if s, ok := kv["secret"]; ok {
		secret = []byte(s)
	}
	data, err := Encode(l, secret)
	if err != nil {
		return nil, err
	}
	for _, w := range words {
		switch w {
		case "unsigned":
			data = bytes.Replace(data, []byte(`"mac":"`), []byte(`"mac":"","x":"`), 1)
		case "tamper": // still valid JSON, so only the MAC can tell
			data = bytes.Replace(data, []byte(`"cost":1`), []byte(`"cost":9`), 1)
		case "oversize":
			data = append(data, bytes.Repeat([]byte(" "), MaxLSASize)...)
		case "garbage":
			data = []byte(`{"v":1,"lsa":`)
		default:
			return nil, fmt.Errorf("unknown word %q", w)
		}
	}
	return data, nil
}

func parseLSA(kv map[string]string) (LSA, error) {
	l := LSA{Router: kv["router"]}
	var err error
	if l.Instance, err = strconv.ParseInt(kv["instance"], 10, 64); err != nil {
		return l, err
	}
	if l.Seq, err = strconv.ParseUint(kv["seq"], 10, 64); err != nil {
		return l, err
	}
	if v, ok := kv["v"]; ok {
		if l.Version, err = strconv.Atoi(v); err != nil {
			return l, err
		}
	}
	if l.Brokers, err = parseBrokers(kv["brokers"]); err != nil {
		return l, err
	}
	l.Links, err = parseLinks(kv["links"])
	return l, err
}

func parseBrokers(s string) ([]BrokerState, error) {
	var out []BrokerState
	for _, b := range splitList(s) {
		name, state, _ := strings.Cut(b, ":")
		switch state {
		case "up", "":
			state = StateOperational
		case "down":
			state = "Failed"
		}
		out = append(out, BrokerState{Name: name, State: state})
	}
	return out, nil
}

func parseLinks(s string) ([]Link, error) {
	var out []Link
	for _, spec := range splitList(s) {
		parts := strings.Split(spec, ":")
		k := Link{Cost: 1, Up: true}
		ends, both := parts[0], strings.Contains(parts[0], "<>")
		var ok bool
		if k.From, k.To, ok = strings.Cut(strings.Replace(ends, "<>", ">", 1), ">"); !ok {
			return nil, fmt.Errorf("link %q: want from>to", spec)
		}
		if len(parts) > 1 {
			c, err := strconv.ParseInt(parts[1], 10, 64)
			if err != nil {
				return nil, err
			}
			k.Cost = c
		}
		k.Up = len(parts) < 3 || parts[2] == "up"
		out = append(out, k)
		if both {
			out = append(out, Link{From: k.To, To: k.From, Cost: k.Cost, Up: k.Up})
		}
	}
	return out, nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func (h *harness) runUntil(kv map[string]string) (string, error) {
	until, err := time.ParseDuration(kv["until"])
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for {
		next := h.n.NextTick(h.now)
		if next.After(t0.Add(until)) {
			break
		}
		h.now = next
		if out := h.ready(h.n.Tick(h.now)); out != "" {
			fmt.Fprintf(&b, "@%s\n%s\n", h.now.Sub(t0), indent(out))
		}
	}
	h.now = t0.Add(until)
	return b.String(), nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// ready prints a Ready, and checks on the way that every flood's bytes
// decode to the LSA it claims to carry.
func (h *harness) ready(r Ready) string {
	var b strings.Builder
	for _, o := range r.Flood {
		got, err := Decode(o.Data, testSecret)
		want := o.LSA
		want.Version = ProtocolVersion
		if err != nil || !reflect.DeepEqual(got, want) {
			h.t.Errorf("flood %s: data decodes to %+v, %v", lsaID(o.LSA), got, err)
		}
		fmt.Fprintf(&b, "flood %s to=%s\n", lsaID(o.LSA), strings.Join(o.To, ","))
	}
	for _, e := range r.Events {
		fmt.Fprintf(&b, "event %s\n", e)
	}
	if r.TableChanged {
		b.WriteString("table changed\n" + tableString(r.Table))
	}
	return strings.TrimRight(b.String(), "\n")
}

// lsaID names one LSA as the events do: router/instance#seq.
func lsaID(l LSA) string { return fmt.Sprintf("%s/%d#%d", l.Router, l.Instance, l.Seq) }

func tableString(p *Paths) string {
	var b strings.Builder
	for _, src := range p.Brokers() {
		for _, r := range p.Routes(src) {
			fmt.Fprintf(&b, "  %s>%s cost=%d hops=%d next=%s", src, r.Dest, r.Cost, r.Hops, r.NextHop)
			if len(r.NextHops) > 1 {
				fmt.Fprintf(&b, " ecmp=%s", strings.Join(r.NextHops, ","))
			}
			b.WriteString("\n")
		}
	}
	if b.Len() == 0 {
		return "  (no routes)\n"
	}
	return b.String()
}

func (h *harness) alt(kv map[string]string, words []string) (string, error) {
	if len(words) != 2 {
		return "", fmt.Errorf("alt: want src dst")
	}
	avoid, err := parseLinks(kv["avoid"])
	if err != nil {
		return "", err
	}
	var es []Edge
	for _, k := range avoid {
		es = append(es, Edge{From: k.From, To: k.To})
	}
	r, path, ok := h.n.Paths().Alternative(words[0], words[1], es...)
	if !ok {
		return "no alternative", nil
	}
	return fmt.Sprintf("path=%s cost=%d hops=%d next=%s ecmp=%s",
		strings.Join(path, ","), r.Cost, r.Hops, r.NextHop, strings.Join(r.NextHops, ",")), nil
}

func (h *harness) view(cmd string, words []string) (string, error) {
	switch cmd {
	case "next":
		return "next tick at " + h.n.NextTick(h.now).Sub(t0).String(), nil
	case "table":
		return tableString(h.n.Paths()), nil
	case "counters":
		return countersString(h.n.Counters()), nil
	case "peers":
		return strings.Join(h.n.Peers(words[0]), ","), nil
	case "routers":
		return routersString(h.n.Snapshot(h.now)), nil
	case "remembered":
		return h.remembered(), nil
	case "dot":
		return h.n.Snapshot(h.now).DOT(), nil
	case "snapshot":
		b, err := json.MarshalIndent(h.n.Snapshot(h.now), "", "  ")
		return string(b), err
	}
	return "", fmt.Errorf("unknown command %q", cmd)
}

// countersString lists the non-zero counters, by their JSON names.
func countersString(c Counters) string {
	var m map[string]uint64
	b, _ := json.Marshal(c)
	_ = json.Unmarshal(b, &m)
	var out []string
	for _, k := range sortedKeys(m) {
		if m[k] != 0 {
			out = append(out, fmt.Sprintf("%s=%d", k, m[k]))
		}
	}
	return strings.Join(out, " ")
}

func routersString(s Snapshot) string {
	var b strings.Builder
	for _, r := range s.Routers {
		fmt.Fprintf(&b, "%s/%d#%d age=%s from=%s\n", r.Router, r.Instance, r.Seq, r.Age, r.From)
	}
	return b.String()
}

// remembered lists the expired routers remembered against replays, with
// the signed time of their last LSA from the script's start.
func (h *harness) remembered() string {
	var b strings.Builder
	for _, id := range sortedKeys(h.n.gone) {
		g := h.n.gone[id]
		fmt.Fprintf(&b, "%s/%d#%d signed=%s\n", id, g.Instance, g.Seq, time.Unix(0, g.time).Sub(t0))
	}
	if b.Len() == 0 {
		return "(none)"
	}
	return strings.TrimRight(b.String(), "\n")
}
