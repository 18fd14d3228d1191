package routes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/fedrouter/fedrouter/internal/ownfile"
)

// The state file is a snapshot (statefile.go) plus a journal beside it,
// StatePath + ".journal": one JSON line per change since the snapshot,
//
//	{"add": Spec}
//	{"del": "route id"}
//
// An add or a delete appends its line and syncs the journal before it is
// acknowledged: a few hundred bytes and one fsync, where rewriting the
// whole file cost 50–95 ms at 10,000 routes. Changes that arrive while a
// sync is under way share the next one (group commit). Once the journal
// holds more lines than the snapshot has routes (and at least
// compactEvery), it is folded into a new snapshot, so the work per change
// stays constant; a clean stop folds it too, so an older fedrouter, which
// reads the snapshot only, finds every route.
//
// Replaying is idempotent: an add sets the route, a delete removes it, the
// last line for an id wins. So a crash between writing a new snapshot and
// emptying the journal replays lines the snapshot already holds, harmlessly,
// and a snapshot taken while later changes wait for the next sync holds
// them twice, also harmlessly. A torn last line (a crash in mid-write) was
// never acknowledged: it is dropped.

// JournalSuffix names the journal beside the state file.
const JournalSuffix = ".journal"

// compactEvery: the journal is folded no more often than every this many
// lines, so that a small state file is not rewritten on every change.
const compactEvery = 1024

// journalLine is one change.
type journalLine struct {
	Add *Spec  `json:"add,omitempty"`
	Del string `json:"del,omitempty"`
}

// replayJournal applies the journal's lines to the snapshot's routes. A
// last line without its newline or not valid JSON is a torn write, never
// acknowledged: dropped, and torn says so. A bad line before the last is
// damage: an error.
func replayJournal(snapshot []Spec, data []byte) (routes []Spec, torn bool, err error) {
	byID := make(map[string]int, len(snapshot))
	routes = append([]Spec(nil), snapshot...)
	for i, s := range routes {
		byID[s.ID()] = i
	}
	var dead []bool
	for n := 1; len(data) > 0; n++ {
		line, rest, complete := bytes.Cut(data, []byte("\n"))
		data = rest
		var l journalLine
		if err := json.Unmarshal(line, &l); err != nil || (l.Add == nil) == (l.Del == "") {
			if !complete || len(data) == 0 {
				return compactSpecs(routes, dead), true, nil
			}
			return nil, false, fmt.Errorf("line %d is damaged: %q", n, line)
		}
		id := l.Del
		if l.Add != nil {
			id = l.Add.ID()
		}
		if i, ok := byID[id]; ok {
			dead = markDead(dead, i, len(routes))
			delete(byID, id)
		}
		if l.Add != nil {
			byID[id] = len(routes)
			routes = append(routes, *l.Add)
		}
	}
	return compactSpecs(routes, dead), false, nil
}

func markDead(dead []bool, i, n int) []bool {
	if len(dead) < n {
		dead = append(dead, make([]bool, n-len(dead))...)
	}
	dead[i] = true
	return dead
}

// compactSpecs drops the routes marked dead, keeping the order.
func compactSpecs(routes []Spec, dead []bool) []Spec {
	out := routes[:0]
	for i, s := range routes {
		if i < len(dead) && dead[i] {
			continue
		}
		out = append(out, s)
	}
	return out
}

// stateLog writes the state file and its journal for a Manager. Its
// methods are safe for concurrent use. mu is taken after Manager.mu
// (enqueue is called under it, so that the journal's order is the order
// of the changes; docs/architecture.md, Lock order); no I/O under mu, and
// snapshot (which takes Manager.mu) is never called under it.
type stateLog struct {
	path     string
	snapshot func() []Spec // the durable runtime routes now

	mu      sync.Mutex
	pending *commit // lines waiting for the next sync; guarded by mu
	writing bool    // a goroutine is writing batches; guarded by mu

	// Owned by the goroutine that has writing set.
	f      *os.File // the journal, appended to
	lines  int      // lines in the journal
	routes int      // routes in the snapshot
	broken bool     // a write failed: the journal's tail is unknown, write a snapshot
}

// commit is one batch of lines and the waiters for its sync.
type commit struct {
	buf     []byte
	lines   int
	compact bool          // fold the journal into a snapshot, if it holds lines (a clean stop)
	force   bool          // fold whatever it holds (a start over a journal of unknown lines)
	done    chan struct{} // closed once err is set
	err     error
}

func newCommit() *commit { return &commit{done: make(chan struct{})} }

// newStateLog writes the state file at path; snapshot returns the routes
// to write when the journal is folded. It does no I/O: the first write
// (Restore's fold, after the load) creates the journal.
func newStateLog(path string, snapshot func() []Spec) *stateLog {
	return &stateLog{path: path, snapshot: snapshot, pending: newCommit()}
}

// enqueue adds changes to the next batch, together, and returns the wait
// for its sync. The caller holds Manager.mu.
func (l *stateLog) enqueue(lines ...journalLine) func() error {
	var buf []byte
	for _, line := range lines {
		b, err := json.Marshal(line)
		if err != nil { // a Spec always encodes; keep the error all the same
			return func() error { return fmt.Errorf("routes: encode a journal line: %w", err) }
		}
		buf = append(append(buf, b...), '\n')
	}
	l.mu.Lock()
	c := l.pending
	c.buf = append(c.buf, buf...)
	c.lines += len(lines)
	l.mu.Unlock()
	return func() error { return l.wait(c) }
}

// enqueueCompact asks the next batch to fold the journal into the state
// file: if it holds lines (a clean stop), or with force whatever it holds
// (a start over a journal left on disk, perhaps torn). Nothing journaled,
// nothing written: a router without durable routes writes no file.
func (l *stateLog) enqueueCompact(force bool) func() error {
	l.mu.Lock()
	c := l.pending
	c.compact = true
	c.force = c.force || force
	l.mu.Unlock()
	return func() error { return l.wait(c) }
}

// wait returns once c is durable (or failed). The first waiter to find
// nobody writing writes every pending batch, its own first; the others
// wait for theirs.
func (l *stateLog) wait(c *commit) error {
	l.mu.Lock()
	if l.writing {
		l.mu.Unlock()
		<-c.done
		return c.err
	}
	l.writing = true
	for {
		batch := l.pending
		if batch.lines == 0 && !batch.compact && batch != c {
			l.writing = false
			l.mu.Unlock()
			break
		}
		l.pending = newCommit()
		l.mu.Unlock()
		batch.err = l.write(batch) // no lock held: a sync takes milliseconds
		close(batch.done)
		l.mu.Lock()
	}
	<-c.done
	return c.err
}

// write makes batch durable: appended and synced, or folded into a new
// snapshot when the journal has grown past the snapshot (or is broken).
func (l *stateLog) write(batch *commit) error {
	n := l.lines + batch.lines
	switch {
	case batch.force, l.broken,
		l.f == nil && batch.lines > 0, // the first change: the journal starts beside a fresh snapshot
		batch.compact && n > 0,
		n > compactEvery && n > l.routes:
		return l.fold(l.snapshot())
	case batch.lines == 0:
		return nil
	}
	if err := l.appendSynced(batch.buf); err != nil {
		l.broken = true
		return err
	}
	l.lines += batch.lines
	return nil
}

// appendSynced appends data to the journal and syncs it.
func (l *stateLog) appendSynced(data []byte) error {
	if _, err := l.f.Write(data); err != nil {
		return fmt.Errorf("routes: append to the state journal: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("routes: sync the state journal: %w", err)
	}
	return nil
}

// fold writes routes as the new snapshot, then empties the journal (a
// crash between the two replays lines the snapshot holds: harmless).
func (l *stateLog) fold(routes []Spec) error {
	if err := SaveState(l.path, routes); err != nil {
		l.broken = true
		return err
	}
	if err := l.truncate(); err != nil {
		l.broken = true
		return err
	}
	l.broken, l.lines, l.routes = false, 0, len(routes)
	return nil
}

// truncate empties the journal, creating it on first use.
func (l *stateLog) truncate() error {
	if l.f == nil {
		f, err := ownfile.Open(l.path+JournalSuffix, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("routes: open the state journal: %w", err)
		}
		l.f = f
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("routes: empty the state journal: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("routes: sync the state journal: %w", err)
	}
	return syncDir(filepath.Dir(l.path)) // its creation is durable once the directory is
}

// close folds the journal into the snapshot (an older fedrouter reads the
// snapshot only) and closes it.
func (l *stateLog) close() error {
	err := l.enqueueCompact(false)()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil && !l.writing {
		if cerr := l.f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("routes: close the state journal: %w", cerr)
		}
		l.f = nil
	}
	return err
}

// LoadJournaled reads the durable runtime routes: the state file at path
// and its journal. torn says the journal ended in a torn line (dropped: a
// crash in mid-write, never acknowledged).
func LoadJournaled(path string) (routes []Spec, torn bool, err error) {
	snap, err := LoadState(path)
	if err != nil {
		return nil, false, err
	}
	data, err := readOwn(path + JournalSuffix)
	if errors.Is(err, os.ErrNotExist) {
		return snap, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("routes: state journal: %w", err)
	}
	routes, torn, err = replayJournal(snap, data)
	if err != nil {
		return nil, false, fmt.Errorf("routes: state journal %s%s: %w; move it away to start with the state file's routes only", path, JournalSuffix, err)
	}
	for i, s := range routes {
		if err := s.Validate(); err != nil {
			return nil, false, fmt.Errorf("routes: state journal %s%s: route %d (%s): %w", path, JournalSuffix, i, s, err)
		}
	}
	return routes, torn, nil
}
