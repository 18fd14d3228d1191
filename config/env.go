package config

import (
	"fmt"
	"strings"
)

// Secrets from the environment. The fields that hold a secret — a
// broker's url, urls, password and management url and password,
// admin.token, topology.secret — may name environment variables as
// ${NAME}; nowhere else is anything expanded, so a '$' in a queue name or
// a route means itself and the environment cannot change what is routed.
// In those fields "$$" is a literal '$' and any other '$' is itself. A
// variable that is not set, or set empty, is an error naming the field
// and the variable — never an empty secret; its value is never repeated
// in a message.

// EnvError is one reference that could not be expanded.
type EnvError struct {
	Var     string // the variable's name; "" when the reference is malformed
	Problem string
}

func (e *EnvError) Error() string {
	if e.Var == "" {
		return e.Problem
	}
	return "environment variable " + e.Var + " " + e.Problem
}

// maxEnvRefs bounds the references one field may hold.
const maxEnvRefs = 16

// expandEnv replaces each ${NAME} in s with the variable's value (lookup
// is os.LookupEnv outside tests) and each "$$" with '$'. The error is an
// *EnvError.
func expandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var out strings.Builder
	refs := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c != '$' || i+1 == len(s):
			out.WriteByte(c)
		case s[i+1] == '$':
			out.WriteByte('$')
			i++
		case s[i+1] == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", &EnvError{Problem: "a ${ without its closing }: write ${NAME}, or $$ for a literal $"}
			}
			name := s[i+2 : i+2+end]
			if !envNameOK(name) {
				return "", &EnvError{Problem: "a ${...} reference that is not a variable name (letters, digits and '_', not starting with a digit): write ${NAME}, or $$ for a literal $"}
			}
			if refs++; refs > maxEnvRefs {
				return "", &EnvError{Problem: fmt.Sprintf("more than %d ${...} references", maxEnvRefs)}
			}
			v, ok := lookup(name)
			switch {
			case !ok:
				return "", &EnvError{Var: name, Problem: "is not set"}
			case v == "":
				return "", &EnvError{Var: name, Problem: "is empty"}
			}
			out.WriteString(v)
			i += 2 + end
		default:
			out.WriteByte(c)
		}
	}
	return out.String(), nil
}

func envNameOK(name string) bool {
	if name == "" || len(name) > 255 || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// expandSecrets expands the secret-bearing fields in place and returns a
// problem ("file:line: field: what") for each that cannot be.
func (c *Config) expandSecrets(lookup func(string) (string, bool)) []string {
	var p []string
	expand := func(key, field string, v *string) {
		s, err := expandEnv(*v, lookup)
		if err != nil {
			p = append(p, fmt.Sprintf("%s: %s: %v", c.at(key), field, err))
			return
		}
		*v = s
	}
	for i := range c.Brokers {
		b := &c.Brokers[i]
		key := fmt.Sprintf("brokers[%d]", i)
		expand(key, key+".url", &b.URL)
		for j := range b.URLs {
			expand(key, fmt.Sprintf("%s.urls[%d]", key, j), &b.URLs[j])
		}
		expand(key, key+".password", &b.Password)
		expand(key, key+".management.url", &b.Management.URL)
		expand(key, key+".management.password", &b.Management.Password)
	}
	expand("admin", "admin.token", &c.Admin.Token)
	expand("topology", "topology.secret", &c.Topology.Secret)
	return p
}
