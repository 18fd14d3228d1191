package main

import (
	"fmt"
	"io"
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
