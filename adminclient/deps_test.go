package adminclient

import (
	"os/exec"
	"strings"
	"testing"
)

// A client of the admin API needs neither the router nor what it is built
// on (issue 26): adminclient and api may import the standard library and
// this module's leaf packages only. The graph is go list's (the go tool
// must be on PATH; the test is skipped without it), without the tests'
// own imports.
func TestClientImportsNoRouter(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to list the import graph")
	}
	const module = "github.com/fedrouter/fedrouter"
	// The router's own packages, and what they are built on: never in a
	// client's graph ("/..." with the packages below; routes' leaves,
	// routespec and pathpolicy, are the vocabulary and allowed).
	banned := []string{"router/...", "routes", "amqp/...", "links", "config", "cluster", "store/...", "console/...", "internal/group", "internal/ownfile", "internal/ratelog"}
	for _, pkg := range []string{module + "/adminclient", module + "/api"} {
		out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 || deps[len(deps)-1] != pkg {
			t.Fatalf("go list -deps %s listed %q: not the graph expected", pkg, deps)
		}
		for _, d := range deps {
			own, ok := strings.CutPrefix(d, module+"/")
			if !ok {
				// github.com/Azure/go-amqp, github.com/jackc/pgx,
				// github.com/prometheus/..., zerolog: none may come back.
				t.Errorf("%s imports %s, a package of another module: a client of the API must not need it", pkg, d)
				continue
			}
			for _, b := range banned {
				tree, sub := strings.CutSuffix(b, "/...")
				if own == tree || (sub && strings.HasPrefix(own, tree+"/")) {
					t.Errorf("%s imports %s: the router's or what it is built on", pkg, d)
				}
			}
		}
	}
}
