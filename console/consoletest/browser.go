// Package consoletest drives the web console in a real browser for tests:
// Debian's headless Chromium over the DevTools protocol (chromedp), one
// tab per Page. /work/shared/reference/browser.md has the measured recipe.
//
// A test without the browser installed skips, except when CI is set,
// where it fails: `make chromium` installs it (root, Debian packages).
package consoletest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ExecPath is Debian's headless shell (package chromium-headless-shell):
// the /usr/lib binary itself, since /usr/bin/chromium-headless-shell is a
// wrapper that does not exec, and it starts faster than chromium.
const ExecPath = "/usr/lib/chromium/chromium-headless-shell"

// stepTimeout bounds one step in the browser (navigate, evaluate,
// screenshot): a query for a missing element would otherwise wait for
// ever.
const stepTimeout = 20 * time.Second

// Page is one browser tab.
type Page struct {
	t   testing.TB
	ctx context.Context // the tab's; has no deadline (it owns the browser's life)

	mu       sync.Mutex
	problems []string // script exceptions and policy violations, as reported
}

// Open starts a browser with one tab at url; both end at the test's
// cleanup. A test without the browser skips (fails when CI is set).
func Open(t testing.TB, url string) *Page {
	t.Helper()
	if _, err := os.Stat(ExecPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no headless Chromium at %s (CI is set): `make chromium` installs it", ExecPath)
		}
		t.Skipf("no headless Chromium at %s: `make chromium` installs it", ExecPath)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ExecPath), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	p := &Page{t: t, ctx: ctx}
	// Listening starts the browser, on a context without a deadline: the
	// browser lives as long as that context.
	if err := chromedp.Listen(ctx, p.listen); err != nil {
		t.Fatalf("start %s: %v", ExecPath, err)
	}
	p.Do("navigate to "+url, chromedp.Navigate(url))
	return p
}

// listen keeps what the page reports that a test must not let pass:
// uncaught exceptions and Content-Security-Policy violations. A failed
// fetch (401) is the page's business and not kept.
func (p *Page) listen(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			msg += " " + e.ExceptionDetails.Exception.Description
		}
	case *log.EventEntryAdded:
		if !strings.Contains(e.Entry.Text, "Content Security Policy") {
			return
		}
		msg = "policy: " + e.Entry.Text
	default:
		return
	}
	p.mu.Lock()
	p.problems = append(p.problems, msg)
	p.mu.Unlock()
}

// Problems are the exceptions and policy violations seen so far.
func (p *Page) Problems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.problems...)
}

// Do runs browser steps within stepTimeout, failing the test with what.
func (p *Page) Do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("browser: %s: %v", what, err)
	}
}

// Eval evaluates a JavaScript expression in the page and decodes its
// value (JSON) into out.
func (p *Page) Eval(expr string, out any) {
	p.t.Helper()
	if err := p.eval(expr, out); err != nil {
		p.t.Fatal(err)
	}
}

func (p *Page) eval(expr string, out any) error {
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr))
	if err != nil {
		return fmt.Errorf("browser: evaluate %q: %w", expr, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("browser: evaluate %q: %w (got %s)", expr, err, raw)
	}
	return nil
}

// Login types the token into the login form and submits it, as an
// operator does.
func (p *Page) Login(token string) {
	p.t.Helper()
	p.Do("log in",
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("login-submit")))
}

// WaitVisible waits for the element with that id to show.
func (p *Page) WaitVisible(id string) {
	p.t.Helper()
	p.Do("wait for #"+id, chromedp.WaitVisible(chromedp.ID(id)))
}

// Click clicks the element with that id.
func (p *Page) Click(id string) {
	p.t.Helper()
	p.Do("click #"+id, chromedp.Click(chromedp.ID(id)))
}

// Poll evaluates check every 50 ms until it returns nil, and fails the
// test if that takes longer than within: within is the requirement
// being tested. It returns how long it took.
func (p *Page) Poll(within time.Duration, what string, check func() error) time.Duration {
	p.t.Helper()
	began := time.Now()
	for {
		err := check()
		if err == nil {
			return time.Since(began)
		}
		if time.Since(began) > within {
			p.t.Fatalf("%s: not within %s: %v", what, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Attrs returns, for every element matching the CSS selector, the value
// of attribute key mapped to attribute value (data-link → data-state):
// what a test reads of the drawing.
func (p *Page) Attrs(selector, key, value string) (map[string]string, error) {
	expr := fmt.Sprintf(`(() => { const m = {}; for (const e of document.querySelectorAll(%q)) m[e.getAttribute(%q)] = e.getAttribute(%q); return m; })()`,
		selector, key, value)
	out := map[string]string{}
	err := p.eval(expr, &out)
	return out, err
}

// Screenshot saves a PNG of the whole page as name in $SHOT_DIR (or the
// test's temporary directory) and returns its path.
func (p *Page) Screenshot(name string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("browser: screenshot: %v", err)
	}
	dir := os.Getenv("SHOT_DIR")
	if dir == "" {
		dir = p.t.TempDir()
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	return path
}
