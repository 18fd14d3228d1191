package topology

import (
	"testing"

	"github.com/fedrouter/fedrouter/internal/golden"
)

// The golden tests: each testdata/*.txt file is a script of commands, each
// followed by "----" and the output it must produce (internal/golden).
// `go test ./topology -run TestScripts -update` rewrites the expected
// outputs from what the code does now; review the diff.
func TestScripts(t *testing.T) {
	golden.RunDir(t, "testdata", func(t *testing.T) golden.Runner {
		h := &harness{t: t}
		return h.run
	})
}

func TestScriptFormatRoundTrips(t *testing.T) {
	golden.CheckRoundTrip(t, "testdata")
}

// args splits "cmd k=v flag k2=v2" into the command, its key=value
// arguments and its bare words.
func args(line string) (cmd string, kv map[string]string, words []string) {
	return golden.Args(line)
}
