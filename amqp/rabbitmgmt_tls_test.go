package amqp_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// RabbitMQ's management API over https, behind a TLS front with a CA of
// the test's own: the broker's tls.ca_file is honoured (issue 17, finding
// 7); without it the certificate is not trusted.
func TestIntegrationManagementTLS(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	mu, err := url.Parse(b.MgmtURL)
	if err != nil {
		t.Fatal(err)
	}
	front, ca := tlsFront(t, mu.Host)
	cfg := b.Config()
	cfg.URLs = []string{"amqps://" + front}
	cfg.Management.URL = "https://" + front
	cfg.TLS.CAFile = ca
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	m, err := amqp.NewRabbitManagement(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Queues(ctx); err != nil {
		t.Fatalf("management over https with the CA: %v", err)
	}

	cfg.TLS.CAFile = ""
	untrusted, err := amqp.NewRabbitManagement(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer untrusted.Close()
	if _, err := untrusted.Queues(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v, want a certificate error", err)
	}
}
