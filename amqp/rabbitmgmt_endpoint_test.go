package amqp

import (
	"strings"
	"testing"
)

// The management URL follows the broker's scheme when it is not given:
// https on 15671 for amqps:// (issue 17, finding 7), http on 15672 for
// amqp://; a given one is checked, and must be https under require_tls.
func TestManagementEndpoint(t *testing.T) {
	cases := []struct {
		url, mgmt, want string
	}{
		{"amqp://h:5672", "", "http://h:15672"},
		{"amqps://user:pw@h", "", "https://h:15671"},
		{"amqps://[::1]:5671", "", "https://[::1]:15671"},
		{"amqps://h", "http://m:8080/", "http://m:8080"},
	}
	for _, c := range cases {
		b := BrokerConfig{URLs: []string{c.url}, Management: ManagementConfig{URL: c.mgmt}}
		base, _, _, err := b.managementEndpoint()
		if err != nil || base != c.want {
			t.Errorf("%s (management %q): %q, %v; want %q", c.url, c.mgmt, base, err, c.want)
		}
	}

	b := BrokerConfig{Name: "b", Profile: "rabbitmq", URLs: []string{"amqps://h"}, RequireTLS: true,
		Management: ManagementConfig{URL: "http://admin:s3cret@m:15672"}}
	err := b.Validate()
	if err == nil || !strings.Contains(err.Error(), `management URL "http://admin:xxxxx@m:15672": require_tls is set: use https://`) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("require_tls with an http management URL: %v", err)
	}
	b.Management.URL = "ftp://m"
	if err := b.Validate(); err == nil || !strings.Contains(err.Error(), "scheme must be http or https") {
		t.Fatalf("ftp management URL: %v", err)
	}
	b.Management.URL = "https://m:15671"
	if err := b.Validate(); err != nil {
		t.Fatalf("https management URL: %v", err)
	}
	b.Management.URL = "http://m:15672"
	b.RequireTLS = false
	if got := b.PlaintextCredentials(); len(got) != 1 || got[0] != "http://m:15672" {
		t.Fatalf("plaintext management %q", got)
	}
	b.Management.URL = ""
	if got := b.PlaintextCredentials(); len(got) != 0 {
		t.Fatalf("derived https management reported as plaintext: %q", got)
	}
	b.Management.URL = "https://m/%zz"
	if err := b.Validate(); err == nil || !strings.Contains(err.Error(), `management URL "https://m/%zz"`) {
		t.Fatalf("unparsable management URL: %v", err)
	}
}
