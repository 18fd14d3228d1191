package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

// broker is one line of the harness's registry (testdata/brokers.sh):
// NAME KIND AMQP_URL MGMT_URL PID.
type broker struct {
	Name, Kind, URL, Mgmt string
	PID                   int
	// mgmt is the management API client of a RabbitMQ node (Mgmt set),
	// made once by loadBrokers; nil for the Proton brokers.
	mgmt *amqp.RabbitManagement
	// qmf is the QMF client of a qpidd broker (qpidd.go); nil otherwise.
	qmf *amqp.QpidManagement
}

func registryPath() string {
	dir := os.Getenv("FEDROUTER_BROKERS_DIR")
	if dir == "" {
		dir = "/tmp/fedrouter-brokers"
	}
	return filepath.Join(dir, "brokers.env")
}

// loadBrokers reads the registry and returns the named brokers, checking
// that each one's process is alive.
func loadBrokers(names ...string) (map[string]broker, error) {
	path := registryPath()
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("broker registry: %w (start the brokers: bash testdata/brokers.sh start -r 2 -p 2)", err)
	}
	defer func() { _ = f.Close() }() // read only: closing has nothing to report
	all := map[string]broker{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			continue
		}
		pid, _ := strconv.Atoi(fs[4])
		mgmt := fs[3]
		if mgmt == "-" {
			mgmt = ""
		}
		all[fs[0]] = broker{Name: fs[0], Kind: fs[1], URL: fs[2], Mgmt: mgmt, PID: pid}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("broker registry %s: %w", path, err)
	}
	out := map[string]broker{}
	for _, n := range names {
		b, ok := all[n]
		if !ok {
			return nil, fmt.Errorf("broker %s is not in %s (bash testdata/brokers.sh start -r 2 -p 2)", n, path)
		}
		if _, err := cpuSeconds(b.PID); err != nil {
			return nil, fmt.Errorf("broker %s (pid %d) is not running: %w", n, b.PID, err)
		}
		if b.Mgmt != "" {
			if b.mgmt, err = amqp.NewRabbitManagement(brokerConfig(b)); err != nil {
				return nil, fmt.Errorf("broker %s: %w", n, err)
			}
		}
		out[n] = b
	}
	return out, nil
}

// profile is the fedrouter broker profile for a harness kind.
func (b broker) profile() string {
	switch b.Kind {
	case "rabbitmq":
		return "rabbitmq"
	case kindQpidd:
		return "qpid"
	}
	return "proton"
}

// hostPort is the AMQP listener as host:port.
func (b broker) hostPort() string { return strings.TrimPrefix(b.URL, "amqp://") }

// rabbitKind is a kind of object a run creates on a RabbitMQ node, with
// how to list and delete it.
type rabbitKind struct {
	name string // as the management API's path names it
	list func(context.Context) ([]string, error)
	del  func(context.Context, string) error
}

// rabbitKinds lists the kinds in the order they can be deleted: a shovel
// before the queues it moves between, a queue before its exchange.
func rabbitKinds(m *amqp.RabbitManagement) []rabbitKind {
	return []rabbitKind{
		{"parameters/shovel", m.ShovelNames, m.DeleteShovel},
		{"queues", m.QueueNames, m.DeleteQueue},
		{"exchanges", m.ExchangeNames, m.DeleteExchange},
	}
}

// declareBound declares fanout exchange x and durable queue q bound to
// it: the destination of a queue route (RabbitMQ routes deliver to an
// exchange), or, with x-single-active-consumer, a fan-out group's shared
// queue as fedrouter declares it (same arguments, or its own declaration
// fails).
func declareBound(ctx context.Context, m *amqp.RabbitManagement, x, q string, args amqp.QueueArgs) error {
	if err := m.DeclareExchange(ctx, x, "fanout", true); err != nil {
		return err
	}
	if err := m.DeclareQueue(ctx, q, args); err != nil {
		return err
	}
	return m.Bind(ctx, x, q, "")
}

// waitQueueMessages polls until q holds want messages per the management
// statistics, or the deadline passes. The statistics lag the queue by up
// to 5 s: this verifies after the fact, it never times a run.
func waitQueueMessages(ctx context.Context, m *amqp.RabbitManagement, q string, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n, known, err := m.QueueMessages(ctx, q)
		if err != nil {
			return err
		}
		if known && n == want {
			return nil
		}
		if time.Now().After(deadline) {
			if !known {
				return fmt.Errorf("queue %s has no message statistics after %s, want %d messages", q, timeout, want)
			}
			return fmt.Errorf("queue %s holds %d messages after %s, want %d", q, n, timeout, want)
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// brokerConfig is b as fedrouter's amqp package takes it: the management
// clients of the RabbitMQ and qpidd brokers are made from it.
func brokerConfig(b broker) amqp.BrokerConfig {
	c := amqp.BrokerConfig{Name: b.Name, URLs: []string{b.URL}, Profile: b.profile()}
	if b.Kind == "rabbitmq" {
		c.Username, c.Password = "guest", "guest"
		c.Management.URL = b.Mgmt
	}
	return c
}
