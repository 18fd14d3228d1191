package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadValueHidesNothing: a value that does not decode is one problem
// among the others, each at its line.
func TestBadValueHidesNothing(t *testing.T) {
	_, err := Parse("f.yaml", []byte(routeConfig("reconnect: {min: 1x}", "log: {level: loud}",
		"destinations:\n  - {name: d, brokers: [a], max_length: [1]}", "admin: {listen: '127.0.0.1:0'}")))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("%v", err)
	}
	want := []string{`f.yaml:5: "1x" is not a duration`, `f.yaml:6: log.level "loud"`, `f.yaml:8: `, `f.yaml:9: admin.listen "127.0.0.1:0": port "0"`}
	if len(ce.Problems) < len(want) {
		t.Fatalf("problems: %q", ce.Problems)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q missing from:\n%v", w, err)
		}
	}
}

// TestFilesJudgedByMode: a missing file named by the configuration is the
// router's business when the CLI reads the file (ModeRead), a problem for
// check-config and run.
func TestFilesJudgedByMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.yaml")
	body := routeConfig("topology: {secret_file: /nonexistent/secret}", "admin: {listen: off}")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Fatalf("ModeRead: %v", err)
	}
	for _, m := range []Mode{ModeCheck, ModeRun} {
		_, _, err := LoadFor(path, m, nil)
		if err == nil || !strings.Contains(err.Error(), path+":5: topology: secret_file: open /nonexistent/secret: no such file or directory") {
			t.Errorf("mode %d: %v", m, err)
		}
	}
}

// TestDecodeErrorsInTheWritersWords: a value of the wrong kind is named
// in YAML's words, never Go's type names.
func TestDecodeErrorsInTheWritersWords(t *testing.T) {
	_, err := Parse("f.yaml", []byte("router_id: [r]\nreconnect: 5\nbrokers:\n  - {name: a, url: 'amqp://h', profile: generic, connections: many, require_tls: maybe}\nroutes: {a: 1}\n"))
	for _, w := range []string{`f.yaml:1: want a string, not a list`, `f.yaml:2: want a mapping (key: value), not 5`, `f.yaml:4: want a whole number, not "many"`,
		`f.yaml:4: want true or false, not "maybe"`, `f.yaml:5: want a list, not a mapping`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%q missing from:\n%v", w, err)
		}
	}
	if err != nil && (strings.Contains(err.Error(), "config.") || strings.Contains(err.Error(), "unmarshal")) {
		t.Errorf("Go's words in:\n%v", err)
	}
}
