// Package golden runs data-driven golden tests (etcd raft's testdata
// style): a script file holds commands, each followed by "----" and the
// output it must produce, then a blank line. Comment lines (#) and blank
// lines before a command are kept. With -update the expected outputs are
// rewritten from what the code does now; review the diff.
//
// Decision cores (topology/, the routes path policy) are tested this way:
// events and time in, actions out, every step visible in the file.
package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected output of the golden scripts (testdata/**/*.txt)")

// Case is one command of a script and its expected output.
type Case struct {
	Prefix []string // comments and blank lines before the command
	Cmd    string
	Line   int // of Cmd, 1-based
	Want   string
}

// Parse reads a script.
func Parse(path string) ([]Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var cases []Case
	var prefix []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			prefix = append(prefix, l)
			continue
		}
		c := Case{Prefix: prefix, Cmd: l, Line: i + 1}
		prefix = nil
		if i+1 >= len(lines) || lines[i+1] != "----" {
			return nil, fmt.Errorf("%s:%d: want ---- after the command", path, i+1)
		}
		i += 2
		var out []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			out = append(out, lines[i])
		}
		c.Want = strings.Join(out, "\n")
		cases = append(cases, c)
	}
	return cases, nil
}

// Format writes cases back as a script.
func Format(cases []Case) string {
	var b strings.Builder
	for _, c := range cases {
		for _, p := range c.Prefix {
			b.WriteString(p + "\n")
		}
		b.WriteString(c.Cmd + "\n----\n")
		if c.Want != "" {
			b.WriteString(c.Want + "\n")
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// Runner runs one script: it gets each command in turn and returns its
// output. Each script gets a new Runner from the factory.
type Runner func(cmd string) (string, error)

// RunDir runs every *.txt script under dir as a subtest, each with a new
// runner, and fails when there is none.
func RunDir(t *testing.T, dir string, newRunner func(t *testing.T) Runner) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in %s: %v", dir, err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			Run(t, path, newRunner(t))
		})
	}
}

// Run runs the script at path, comparing each command's output with the
// expected one (or rewriting it with -update).
func Run(t *testing.T, path string, run Runner) {
	t.Helper()
	cases, err := Parse(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cases {
		c := &cases[i]
		got, err := run(c.Cmd)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", path, c.Line, c.Cmd, err)
		}
		got = strings.TrimRight(got, "\n")
		if *update {
			c.Want = got
		} else if got != c.Want {
			t.Errorf("%s:%d: %s\n--- got\n%s\n--- want\n%s", path, c.Line, c.Cmd, got, c.Want)
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(Format(cases)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// CheckRoundTrip fails when a script under dir does not come back
// unchanged through Parse and Format (a blank line inside an output
// would split it).
func CheckRoundTrip(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cases, err := Parse(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := Format(cases); got != string(data) {
			t.Errorf("%s does not round-trip through the parser (blank lines in output?)", path)
		}
	}
}

// Args splits "cmd k=v word k2=v2" into the command, its key=value
// arguments and its bare words.
func Args(line string) (cmd string, kv map[string]string, words []string) {
	f := strings.Fields(line)
	kv = map[string]string{}
	if len(f) == 0 {
		return "", kv, nil
	}
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			kv[k] = v
		} else {
			words = append(words, a)
		}
	}
	return f[0], kv, words
}
