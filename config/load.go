package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fedrouter/fedrouter/internal/ownfile"
)

// Error lists every problem found in a configuration file, each as
// "file:line: what".
type Error struct {
	File     string
	Problems []string
}

func (e *Error) Error() string {
	return fmt.Sprintf("config %s: %d problem(s):\n  %s", e.File, len(e.Problems), strings.Join(e.Problems, "\n  "))
}

// MaxConfigSize bounds the configuration file: 10,000 routes take about
// 1 MiB; a larger file is a mistake or an attack on the memory of
// check-config and the router.
const MaxConfigSize = 4 << 20

// Load reads, decodes and validates a configuration file.
func Load(path string) (*Config, error) {
	data, err := ownfile.ReadRegular(path, MaxConfigSize)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data)
}

var (
	yamlLine    = regexp.MustCompile(`line (\d+): `)
	yamlUnknown = regexp.MustCompile(`field (\S+) not found in type \S+`)
)

// Parse decodes and validates data; file names it in messages.
func Parse(file string, data []byte) (*Config, error) {
	cfg := DefaultConfig()
	cfg.file = file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true) // unknown keys are errors
	var problems []string
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		problems = yamlProblems(file, err)
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			// A syntax error: nothing else can be trusted.
			return nil, &Error{File: file, Problems: problems}
		}
		// Type errors and unknown keys: decoding went on; report them
		// together with the validation problems.
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err == nil {
		cfg.lines = itemLines(&root)
	}
	// ${NAME} in the secret fields, before they are judged (env.go).
	problems = append(problems, cfg.expandSecrets(os.LookupEnv)...)
	problems = append(problems, cfg.validate()...)
	if len(problems) > 0 {
		sort.SliceStable(problems, func(i, j int) bool { return lineOf(problems[i]) < lineOf(problems[j]) })
		return nil, &Error{File: file, Problems: problems}
	}
	return &cfg, nil
}

// yamlProblems turns yaml.v3's "line N: msg" errors into "file:N: msg".
func yamlProblems(file string, err error) []string {
	var te *yaml.TypeError
	msgs := []string{err.Error()}
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		m = strings.TrimPrefix(m, "yaml: ")
		m = yamlUnknown.ReplaceAllString(m, `unknown key "$1"`)
		if loc := yamlLine.FindStringSubmatchIndex(m); loc != nil {
			m = file + ":" + m[loc[2]:loc[3]] + ": " + m[loc[1]:]
		} else {
			m = file + ": " + m
		}
		out = append(out, m)
	}
	return out
}

// itemLines maps top-level keys to their lines, and "brokers[i]" and
// "routes[i]" to the line of that list item.
func itemLines(root *yaml.Node) map[string]int {
	out := map[string]int{}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return out
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if key := m.Content[i].Value; key == "brokers" || key == "routes" || key == "links" || key == "destinations" {
			for j, item := range m.Content[i+1].Content {
				out[fmt.Sprintf("%s[%d]", key, j)] = item.Line
			}
		}
		if m.Content[i].Value == "ingress" && m.Content[i+1].Kind == yaml.MappingNode {
			in := m.Content[i+1]
			for k := 0; k+1 < len(in.Content); k += 2 {
				if in.Content[k].Value == "allow" {
					for j, item := range in.Content[k+1].Content {
						out[fmt.Sprintf("ingress.allow[%d]", j)] = item.Line
					}
				}
			}
		}
		out[m.Content[i].Value] = m.Content[i].Line
	}
	return out
}

func (c *Config) at(key string) string {
	if l, ok := c.lines[key]; ok {
		return fmt.Sprintf("%s:%d", c.file, l)
	}
	return c.file
}

// lineOf is the line number after the file name in a problem
// ("file:12: ..."), 0 when it has none.
func lineOf(problem string) int {
	var n int
	if i := strings.Index(problem, ":"); i >= 0 {
		if _, err := fmt.Sscanf(problem[i+1:], "%d", &n); err != nil {
			return 0 // no line number
		}
	}
	return n
}
