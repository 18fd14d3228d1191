package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// printer is a command's output with a sticky error, the way bufio.Writer
// keeps one: a command prints freely, and done reports the first failed
// write once. Between table and endTable, what it prints is laid out in
// columns (cells end with a tab).
type printer struct {
	out io.Writer
	tw  *tabwriter.Writer // the open table; nil between tables
	err error             // the first write error; later prints are skipped
}

func newPrinter(out io.Writer) *printer { return &printer{out: out} }

func (p *printer) printf(format string, args ...any) {
	if p.err != nil {
		return
	}
	w := p.out
	if p.tw != nil {
		w = p.tw
	}
	_, p.err = fmt.Fprintf(w, format, args...)
}

func (p *printer) println(s string) { p.printf("%s\n", s) }

// table starts laying out what is printed in columns, until endTable.
func (p *printer) table() {
	p.endTable()
	p.tw = tabwriter.NewWriter(p.out, 0, 4, 2, ' ', 0)
}

// endTable writes the open table out, if any.
func (p *printer) endTable() {
	if p.tw != nil && p.err == nil {
		p.err = p.tw.Flush()
	}
	p.tw = nil
}

// done ends the open table and reports the first write that failed.
func (p *printer) done() error {
	p.endTable()
	if p.err != nil {
		return fmt.Errorf("writing the output: %w", p.err)
	}
	return nil
}

// sizeUnits are the binary units sizeText uses, each 1024 of the last.
var sizeUnits = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// sizeText is a number of bytes as a person reads it: "512 B", "16 KiB",
// "1.5 MiB" (binary units, one decimal where it is not zero). Every size
// the CLI prints goes through it.
func sizeText(n int64) string {
	sign := ""
	if n < 0 {
		sign = "-"
	}
	if n > -1024 && n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, unit := math.Abs(float64(n)), 0
	// Move up while the value, rounded to one decimal, would read 1024 or
	// more: 1048575 bytes is "1 MiB", not "1024 KiB".
	for unit < len(sizeUnits)-1 && math.Round(v*10)/10 >= 1024 {
		v /= 1024
		unit++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return sign + strings.TrimSuffix(s, ".0") + " " + sizeUnits[unit]
}
