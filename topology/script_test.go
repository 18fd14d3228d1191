package topology

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The golden tests: each testdata/*.txt file is a script of commands, each
// followed by "----" and the output it must produce, then a blank line
// (raft's testdata style). Comment lines (#) and blank lines before a
// command are kept. `go test ./topology -run TestScripts -update` rewrites
// the expected outputs from what the code does now; review the diff.
var update = flag.Bool("update", false, "rewrite the expected output in topology/testdata/*.txt")

// scriptCase is one command and its expected output.
type scriptCase struct {
	prefix []string // comments and blank lines before the command
	cmd    string
	line   int // of cmd, 1-based
	want   string
}

func parseScript(path string) ([]scriptCase, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var cases []scriptCase
	var prefix []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			prefix = append(prefix, l)
			continue
		}
		c := scriptCase{prefix: prefix, cmd: l, line: i + 1}
		prefix = nil
		if i+1 >= len(lines) || lines[i+1] != "----" {
			return nil, fmt.Errorf("%s:%d: want ---- after the command", path, i+1)
		}
		i += 2
		var out []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			out = append(out, lines[i])
		}
		c.want = strings.Join(out, "\n")
		cases = append(cases, c)
	}
	return cases, nil
}

func formatScript(cases []scriptCase) string {
	var b strings.Builder
	for _, c := range cases {
		for _, p := range c.prefix {
			b.WriteString(p + "\n")
		}
		b.WriteString(c.cmd + "\n----\n")
		if c.want != "" {
			b.WriteString(c.want + "\n")
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			runScript(t, path)
		})
	}
}

func runScript(t *testing.T, path string) {
	cases, err := parseScript(path)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t}
	for i := range cases {
		c := &cases[i]
		got, err := h.run(c.cmd)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", path, c.line, c.cmd, err)
		}
		got = strings.TrimRight(got, "\n")
		if *update {
			c.want = got
		} else if got != c.want {
			t.Errorf("%s:%d: %s\n--- got\n%s\n--- want\n%s", path, c.line, c.cmd, got, c.want)
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(formatScript(cases)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestScriptFormatRoundTrips(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, path := range files {
		data, _ := os.ReadFile(path)
		cases, err := parseScript(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := formatScript(cases); got != string(data) {
			t.Errorf("%s does not round-trip through the parser (blank lines in output?)", path)
		}
	}
}

// args splits "cmd k=v flag k2=v2" into the command, its key=value
// arguments and its bare words.
func args(line string) (cmd string, kv map[string]string, words []string) {
	f := strings.Fields(line)
	kv = map[string]string{}
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			kv[k] = v
		} else {
			words = append(words, a)
		}
	}
	return f[0], kv, words
}
