package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// broker is one line of the harness's registry (testdata/brokers.sh):
// NAME KIND AMQP_URL MGMT_URL PID.
type broker struct {
	Name, Kind, URL, Mgmt string
	PID                   int
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
	defer f.Close()
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
		out[n] = b
	}
	return out, nil
}

// profile is the fedrouter broker profile for a harness kind.
func (b broker) profile() string {
	if b.Kind == "rabbitmq" {
		return "rabbitmq"
	}
	return "proton"
}

// hostPort is the AMQP listener as host:port.
func (b broker) hostPort() string { return strings.TrimPrefix(b.URL, "amqp://") }
