// Package console is the admin API's web console: a read-only page that
// draws what the API's JSON endpoints say (the broker graph, the routes,
// the cluster members, the global destinations). It is static HTML, CSS
// and plain JavaScript modules embedded in the binary: no build step, no
// framework, nothing fetched from the internet. docs/console.md.
//
// The files hold no data, so serving them needs no token: the page asks
// for the admin token and sends it on each of its fetches to the API,
// which checks it as it checks the CLI's (router/admin_guard.go).
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// Prefix is where the admin API mounts Handler.
const Prefix = "/console/"

// CSP lets the page load its own scripts, styles and API answers and
// nothing else: no inline script or style, no other origin, no frames
// around it, no form submitted anywhere (the login form is read by
// script, so a token never lands in a URL even with script broken).
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed static
var static embed.FS

// files is static without its directory name, as the page sees it.
var files = mustSub(static, "static")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil { // only for an invalid dir name: a constant here
		panic(err)
	}
	return sub
}

// Handler serves the console's files under Prefix. Directories other than
// the page's own are not listed.
func Handler() http.Handler {
	fileServer := http.StripPrefix(Prefix, http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		// Other sites may link to the page but not load its files into
		// theirs (a script tag, an image).
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		// Small files, revalidated on each load: a new binary's page is
		// never mixed with an old one's scripts.
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path != Prefix && strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		fileServer.ServeHTTP(w, r)
	})
}

// Open says whether r only asks for the console's files (or / and
// /console, which redirect to them): a GET or HEAD that needs no token.
func Open(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	if clean != p { // "/console/../api/v1/routes" is not the console's
		return false
	}
	return p == "/" || p == strings.TrimSuffix(Prefix, "/") || strings.HasPrefix(p, Prefix)
}
