package config

import (
	"errors"
	"strings"
	"testing"
)

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"PW": "s3cr$t", "USER_1": "svc", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cases := []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"${PW}", "s3cr$t", ""},
		{"amqp://${USER_1}:${PW}@h", "amqp://svc:s3cr$t@h", ""},
		{"a$$b", "a$b", ""},
		{"$${PW}", "${PW}", ""},
		{"pa$word$", "pa$word$", ""},
		{"${NOPE}", "", "environment variable NOPE is not set"},
		{"${EMPTY}", "", "environment variable EMPTY is empty"},
		{"x${PW", "", "a ${ without its closing }"},
		{"${1X}", "", "not a variable name"},
		{"${A:-default}", "", "not a variable name"},
		{"${}", "", "not a variable name"},
		{strings.Repeat("${PW}", maxEnvRefs+1), "", "more than 16"},
	}
	for _, c := range cases {
		got, err := expandEnv(c.in, lookup)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("expandEnv(%q) = %q, %v; want %q", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("expandEnv(%q): error %v, want %q", c.in, err, c.err)
		case err != nil && strings.Contains(err.Error(), "s3cr"):
			t.Errorf("expandEnv(%q): the error shows a value: %v", c.in, err)
		}
		var ee *EnvError
		if err != nil && !errors.As(err, &ee) {
			t.Errorf("expandEnv(%q): %T, want *EnvError", c.in, err)
		}
	}
}

// Secrets from environment variables in the secret fields only; an unset
// variable is a problem naming the line, the field and the variable
// (issue 17, finding 7).
func TestConfigSecretsFromEnv(t *testing.T) {
	t.Setenv("FEDROUTER_TEST_RABBIT_PW", "pw-from-env")
	t.Setenv("FEDROUTER_TEST_SECRET", "network-secret-from-env-0123456789ab")
	yaml := "router_id: r\nbrokers:\n" +
		"  - {name: a, url: 'amqp://u:${FEDROUTER_TEST_RABBIT_PW}@h', profile: rabbitmq, password: '${FEDROUTER_TEST_RABBIT_PW}',\n" +
		"     management: {url: 'http://h:15672', password: '${FEDROUTER_TEST_RABBIT_PW}'}}\n" +
		"  - {name: b, urls: ['amqp://${FEDROUTER_TEST_NOT_SET}@h'], profile: generic}\n" +
		"routes:\n  - {kind: queue, src: a, dest: b, exchange: 'ex$${x}', queue: q}\n" +
		"topology: {secret: '${FEDROUTER_TEST_SECRET}'}\n"
	_, err := Parse("f.yaml", []byte(yaml))
	var ce *Error
	if !errors.As(err, &ce) || len(ce.Problems) < 1 || !strings.Contains(ce.Problems[0], "f.yaml:5: brokers[1].urls[0]: environment variable FEDROUTER_TEST_NOT_SET is not set") {
		t.Fatalf("unset variable: %v", err)
	}
	t.Setenv("FEDROUTER_TEST_NOT_SET", "user")
	cfg, err := Parse("f.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	bcs, err := cfg.BrokerConfigs()
	if err != nil {
		t.Fatal(err)
	}
	if bcs[0].URLs[0] != "amqp://u:pw-from-env@h" || bcs[0].Password != "pw-from-env" || bcs[0].Management.Password != "pw-from-env" ||
		bcs[1].URLs[0] != "amqp://user@h" {
		t.Fatalf("expanded brokers %+v", bcs)
	}
	if s, _ := cfg.TopologySecret(); s != "network-secret-from-env-0123456789ab" {
		t.Fatalf("topology secret %q", s)
	}
	// Not a secret field: left as written.
	if ex := cfg.Routes[0].Exchange; ex != "ex$${x}" {
		t.Fatalf("route exchange %q expanded", ex)
	}
}
