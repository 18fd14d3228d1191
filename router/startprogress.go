package router

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/routes"
)

// Start-up progress: the routes restored at start (the configuration's
// and the state file's) come up over seconds or minutes; the log says how
// far they are ("routes: 9,800 of 10,000 Operational") every
// progressEvery, and once all are Operational, or progressBound after the
// start, one summary line.

const (
	progressEvery = 5 * time.Second
	progressBound = 5 * time.Minute
	progressTick  = time.Second
)

// startProgress is what the progress decision remembers between calls.
type startProgress struct {
	began, last time.Time // the start; the last line logged
	done        bool      // the summary was logged
}

// progressLine is a line to log: its text and counts, and whether it is
// the summary (the last).
type progressLine struct {
	Text      string
	Up, Total int
	Summary   bool
	Elapsed   time.Duration
}

// nextProgress is the progress decision: up of total restored routes are
// Operational at now; it gives the state to keep and the line to log, if
// any. No routes restored: no line at all.
func nextProgress(st startProgress, up, total int, now time.Time, every, bound time.Duration) (startProgress, *progressLine) {
	if st.done {
		return st, nil
	}
	elapsed := now.Sub(st.began)
	line := &progressLine{Up: up, Total: total, Elapsed: elapsed.Round(time.Millisecond)}
	switch {
	case total == 0:
		st.done = true
		return st, nil
	case up >= total:
		st.done, line.Summary = true, true
		line.Text = fmt.Sprintf("routes: all %s Operational after %s", thousands(total), line.Elapsed)
	case elapsed >= bound:
		st.done, line.Summary = true, true
		line.Text = fmt.Sprintf("routes: %s of %s Operational after %s; %s not Operational (route list shows why)",
			thousands(up), thousands(total), line.Elapsed, thousands(total-up))
	case now.Sub(st.last) >= every:
		line.Text = fmt.Sprintf("routes: %s of %s Operational", thousands(up), thousands(total))
	default:
		return st, nil
	}
	st.last = now
	return st, line
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// progressLogger carries the decision out: every progressTick it counts
// the restored routes that are Operational and logs what nextProgress
// says. Owned by the router: started by Start, stopped by Stop.
type progressLogger struct {
	quit chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// startProgressLogger follows the routes with ids (those restored) in
// list until the summary.
func startProgressLogger(log zerolog.Logger, ids map[string]bool, list func() []routes.Status, now func() time.Time) *progressLogger {
	p := &progressLogger{quit: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		st := startProgress{began: now(), last: now()}
		tick := time.NewTicker(progressTick)
		defer tick.Stop()
		for {
			up, total := countUp(ids, list())
			var line *progressLine
			st, line = nextProgress(st, up, total, now(), progressEvery, progressBound)
			if line != nil {
				log.Info().Int("operational", line.Up).Int("routes", line.Total).Bool("summary", line.Summary).
					Dur("elapsed", line.Elapsed).Msg(line.Text)
			}
			if st.done {
				return
			}
			select {
			case <-tick.C:
			case <-p.quit:
				return
			}
		}
	}()
	return p
}

// restoredIDs are the ids of the routes listed right after the restore:
// those the progress follows.
func restoredIDs(sts []routes.Status) map[string]bool {
	ids := make(map[string]bool, len(sts))
	for _, st := range sts {
		ids[st.ID] = true
	}
	return ids
}

// countUp counts, of the routes listed that are among ids, those
// Operational, and how many are listed (a restored route deleted since
// is no longer waited for).
func countUp(ids map[string]bool, sts []routes.Status) (up, total int) {
	for _, st := range sts {
		if !ids[st.ID] {
			continue
		}
		total++
		if st.State == routes.StateOperational {
			up++
		}
	}
	return up, total
}

// stop ends the logger and waits for it; idempotent, nil-safe.
func (p *progressLogger) stop() {
	if p == nil {
		return
	}
	p.once.Do(func() { close(p.quit) })
	p.wg.Wait()
}
