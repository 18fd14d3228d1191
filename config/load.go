package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fedrouter/fedrouter/internal/ownfile"
)

// Error lists every problem found in a configuration file, each as
// "file:line: what", or says why the file could not be read (Read).
type Error struct {
	File     string
	Problems []string
	Read     error // the file could not be read: missing, not ours, too large
}

func (e *Error) Error() string {
	if e.Read != nil {
		return fmt.Sprintf("config %s: %v", e.File, e.Read)
	}
	return fmt.Sprintf("config %s: %d problem(s):\n  %s", e.File, len(e.Problems), strings.Join(e.Problems, "\n  "))
}

// Unwrap is the read error, if any (fs.ErrNotExist for a missing file).
func (e *Error) Unwrap() error { return e.Read }

// MaxConfigSize bounds the configuration file: 10,000 routes take about
// 1 MiB; a larger file is a mistake or an attack on the memory of
// check-config and the router.
const MaxConfigSize = 4 << 20

// Mode says how the files a configuration names (secrets, certificates,
// the state file) are judged: by whom, for what.
type Mode int

const (
	// ModeRead: another program reads a router's file (the CLI's
	// --config): a named file missing or not readable here is the
	// router's business, not judged.
	ModeRead Mode = iota
	// ModeCheck: check-config. Everything the start reads is judged; a
	// file this user may not read (or that another user owns, where the
	// router wants its own) is noted instead: the router's user may.
	ModeCheck
	// ModeRun: the router's start. Every file must be there and readable.
	ModeRun
)

// Load reads, decodes and validates a configuration file (ModeRead).
func Load(path string) (*Config, error) {
	cfg, _, err := LoadFor(path, ModeRead, nil)
	return cfg, err
}

// LoadFor reads, decodes and validates a configuration file as mode says
// and adds more's problems (the router's own checks of what it would
// refuse at start, given the decoded file even when it has problems):
// every problem at once in one *Error, those of the file by line, then
// those of other files (the state file). notes are what ModeCheck could
// not judge. check-config and run both call it, through router.LoadConfig.
func LoadFor(path string, mode Mode, more func(*Config) (problems, notes []string)) (*Config, []string, error) {
	data, err := ownfile.ReadRegular(path, MaxConfigSize)
	if err != nil {
		return nil, nil, &Error{File: path, Read: err}
	}
	cfg, problems := parse(path, data, mode)
	if cfg == nil {
		return nil, nil, &Error{File: path, Problems: problems}
	}
	if more != nil {
		p, n := more(cfg)
		problems, cfg.notes = append(problems, p...), append(cfg.notes, n...)
	}
	if len(problems) > 0 {
		sortProblems(path, problems)
		return nil, nil, &Error{File: path, Problems: problems}
	}
	return cfg, cfg.notes, nil
}

var (
	yamlLine      = regexp.MustCompile(`line (\d+): `)
	yamlUnknown   = regexp.MustCompile(`field (\S+) not found in type \S+`)
	yamlUnmarshal = regexp.MustCompile("cannot unmarshal !!(\\w+)(?: `([^`]*)`)? into (\\S+)")
)

// kindWords says what a value of a decoded Go type is, in a YAML
// writer's words (never the Go type's name).
func kindWords(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["), strings.Contains(goType, "."):
		return "a mapping (key: value)"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "a whole number"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "a string"
	}
	return "another kind of value"
}

// unmarshalWords rewrites yaml.v3's "cannot unmarshal !!str `x` into
// int" as "want a whole number, not \"x\"".
func unmarshalWords(m string) string {
	return yamlUnmarshal.ReplaceAllStringFunc(m, func(s string) string {
		g := yamlUnmarshal.FindStringSubmatch(s)
		got := map[string]string{"seq": "a list", "map": "a mapping", "null": "nothing"}[g[1]]
		switch {
		case got != "":
		case g[1] == "str":
			got = strconv.Quote(g[2])
		default:
			got = g[2]
		}
		return "want " + kindWords(g[3]) + ", not " + got
	})
}

// Parse decodes and validates data (ModeRead); file names it in messages.
func Parse(file string, data []byte) (*Config, error) {
	cfg, problems := parse(file, data, ModeRead)
	if len(problems) > 0 {
		sortProblems(file, problems)
		return nil, &Error{File: file, Problems: problems}
	}
	return cfg, nil
}

// parse decodes and validates data as mode says. The configuration is
// returned with its problems, nil only when the YAML cannot be read at
// all (a syntax error: nothing else can be trusted).
func parse(file string, data []byte, mode Mode) (*Config, []string) {
	cfg := DefaultConfig()
	cfg.file, cfg.mode = file, mode
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true) // unknown keys are errors
	var problems []string
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		problems = yamlProblems(file, err)
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, problems
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
	if mode != ModeRead {
		problems = append(problems, cfg.checkStartFiles()...)
	}
	return &cfg, problems
}

// sortProblems orders problems: those of file by line, then the others
// (other files'), as they came.
func sortProblems(file string, problems []string) {
	key := func(p string) int {
		if !strings.HasPrefix(p, file+":") {
			return 1 << 30
		}
		return lineOf(strings.TrimPrefix(p, file))
	}
	sort.SliceStable(problems, func(i, j int) bool { return key(problems[i]) < key(problems[j]) })
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
		m = unmarshalWords(m)
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

// Where is key's place in the file, "file:line" ("brokers[2]",
// "topology", ...), for problems found outside this package.
func (c *Config) Where(key string) string { return c.at(key) }

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
