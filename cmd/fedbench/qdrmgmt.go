package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/Azure/go-amqp"
)

// Qpid Dispatch's AMQP management: requests to $management on the
// router's listener, replies to a dynamic address. Its own tools (qdstat,
// qdmanage) are not in the shared build.
const (
	qdrTypeLink      = "org.apache.qpid.dispatch.router.link"
	qdrTypeAutoLink  = "org.apache.qpid.dispatch.router.config.autoLink"
	qdrTypeConnector = "org.apache.qpid.dispatch.connector"
	// qdrMaxRows bounds what one QUERY may return: a bench router has a
	// few dozen links.
	qdrMaxRows = 10000
)

// qdrMgmt is one management client of a bench qdrouterd: requests are
// sent one at a time, so the next reply is the answer.
type qdrMgmt struct {
	conn  *amqp.Conn
	snd   *amqp.Sender
	rcv   *amqp.Receiver
	reply string
	seq   int
}

func dialQdrMgmt(ctx context.Context, hostPort string) (*qdrMgmt, error) {
	conn, err := amqp.Dial(ctx, "amqp://"+hostPort, &amqp.ConnOptions{ContainerID: "fedbench-qdr-mgmt", SASLType: amqp.SASLTypeAnonymous()})
	if err != nil {
		return nil, fmt.Errorf("qdrouterd management on %s: %w", hostPort, err)
	}
	m := &qdrMgmt{conn: conn}
	if err := m.open(ctx); err != nil {
		_ = conn.Close() // the open's error is the one to report
		return nil, fmt.Errorf("qdrouterd management on %s: %w", hostPort, err)
	}
	return m, nil
}

func (m *qdrMgmt) open(ctx context.Context) error {
	sess, err := m.conn.NewSession(ctx, nil)
	if err != nil {
		return err
	}
	if m.rcv, err = sess.NewReceiver(ctx, "", &amqp.ReceiverOptions{DynamicAddress: true, Credit: 10}); err != nil {
		return err
	}
	m.reply = m.rcv.Address()
	m.snd, err = sess.NewSender(ctx, "$management", nil)
	return err
}

func (m *qdrMgmt) close() { _ = m.conn.Close() } // a benchmark client: a failed close changes no figure

// request sends one management request and returns the reply's status
// code, description and body.
func (m *qdrMgmt) request(ctx context.Context, props map[string]any, body any) (int, string, any, error) {
	m.seq++
	id := fmt.Sprintf("fedbench-%d", m.seq)
	req := &amqp.Message{
		Properties:            &amqp.MessageProperties{MessageID: id, ReplyTo: &m.reply},
		ApplicationProperties: props,
		Value:                 body,
	}
	if err := m.snd.Send(ctx, req, nil); err != nil {
		return 0, "", nil, fmt.Errorf("management %v: %w", props["operation"], err)
	}
	resp, err := m.rcv.Receive(ctx, nil)
	if err != nil {
		return 0, "", nil, fmt.Errorf("management %v: reply: %w", props["operation"], err)
	}
	_ = m.rcv.AcceptMessage(ctx, resp) // the router's reply link: settling it changes nothing we read
	// One request at a time: the next reply is its answer. Some error
	// replies carry no correlation-id; one that names another request is
	// refused.
	if resp.Properties != nil && resp.Properties.CorrelationID != nil && resp.Properties.CorrelationID != id {
		return 0, "", nil, fmt.Errorf("management %v: a reply to %v, not to request %s", props["operation"], resp.Properties.CorrelationID, id)
	}
	code, ok := qmfInt(resp.ApplicationProperties["statusCode"])
	if !ok {
		return 0, "", nil, fmt.Errorf("management %v: reply without a statusCode", props["operation"])
	}
	desc, _ := resp.ApplicationProperties["statusDescription"].(string)
	return int(code), desc, resp.Value, nil
}

// remove deletes the entity of typ named name (204 No Content).
func (m *qdrMgmt) remove(ctx context.Context, typ, name string) error {
	code, desc, _, err := m.request(ctx, map[string]any{"operation": "DELETE", "type": typ, "name": name}, nil)
	if err != nil {
		return err
	}
	if code != 204 && code != 200 {
		return fmt.Errorf("qdrouterd: delete %s %s: %d %s", typ, name, code, desc)
	}
	return nil
}

// create makes an entity of typ named name with attrs (201 Created).
func (m *qdrMgmt) create(ctx context.Context, typ, name string, attrs map[string]any) error {
	code, desc, _, err := m.request(ctx, map[string]any{"operation": "CREATE", "type": typ, "name": name}, attrs)
	if err != nil {
		return err
	}
	if code != 201 {
		return fmt.Errorf("qdrouterd: create %s %s: %d %s", typ, name, code, desc)
	}
	return nil
}

// query lists the entities of typ, each as a map of the attributes asked
// for.
func (m *qdrMgmt) query(ctx context.Context, typ string, attrs ...string) ([]map[string]any, error) {
	names := make([]any, len(attrs)) // a list, as the agent expects; []string would be an array
	for i, a := range attrs {
		names[i] = a
	}
	code, desc, body, err := m.request(ctx, map[string]any{"operation": "QUERY", "type": "org.amqp.management", "name": "self", "entityType": typ}, map[string]any{"attributeNames": names})
	if err != nil {
		return nil, err
	}
	if code != 200 {
		return nil, fmt.Errorf("qdrouterd: query %s: %d %s", typ, code, desc)
	}
	rows, err := parseQuery(body)
	if err != nil {
		return nil, fmt.Errorf("qdrouterd: query %s: %w", typ, err)
	}
	return rows, nil
}

// parseQuery reads a QUERY reply's body, {attributeNames: [...], results:
// [[...], ...]}, into one map per row. Nothing in it is trusted: every
// row must have as many values as there are names, and there are at most
// qdrMaxRows rows.
func parseQuery(body any) ([]map[string]any, error) {
	m, ok := anyMap(body)
	if !ok {
		return nil, fmt.Errorf("reply body is %T, want a map", body)
	}
	names, ok := m["attributeNames"].([]any)
	if !ok {
		return nil, fmt.Errorf("reply has no attributeNames list (%T)", m["attributeNames"])
	}
	results, ok := m["results"].([]any)
	if !ok {
		return nil, fmt.Errorf("reply has no results list (%T)", m["results"])
	}
	if len(results) > qdrMaxRows {
		return nil, fmt.Errorf("reply has %d rows, more than %d", len(results), qdrMaxRows)
	}
	keys := make([]string, len(names))
	for i, n := range names {
		if keys[i], ok = n.(string); !ok {
			return nil, fmt.Errorf("attribute name %d is %T, want a string", i, n)
		}
	}
	rows := make([]map[string]any, 0, len(results))
	for i, r := range results {
		vals, ok := r.([]any)
		if !ok || len(vals) != len(keys) {
			return nil, fmt.Errorf("row %d is not a list of %d values", i, len(keys))
		}
		row := make(map[string]any, len(keys))
		for j, k := range keys {
			row[k] = vals[j]
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// anyMap accepts a decoded AMQP map whichever key type it came with.
func anyMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, x := range m {
			s, ok := k.(string)
			if !ok {
				return nil, false
			}
			out[s] = x
		}
		return out, true
	}
	return nil, false
}

// qdrCounts are the counters of a run's links in a qdrouterd.
type qdrCounts struct {
	// settled: deliveries on the in-links settled with the source —
	// accepted there once the destination accepted, or sent pre-settled
	// by the source (the Proton C broker).
	settled int64
	// unsettled: deliveries on the in-links not yet settled with the
	// source (the counters move when the router decides; the disposition
	// to the source goes out after).
	unsettled int64
	// dropped: pre-settled deliveries the router dropped, on any of the
	// run's links (a pre-settled message is best-effort to it).
	dropped int64
	ins     int // in-links
}

// countLinks sums the counters of the router's links that carry one of
// addrs. An auto-link's owningAddr is the address with its class and
// phase in front ("M0" + address).
func countLinks(rows []map[string]any, addrs map[string]bool) qdrCounts {
	var c qdrCounts
	for _, l := range rows {
		owner, _ := l["owningAddr"].(string)
		if len(owner) < 2 || !addrs[owner[2:]] {
			continue
		}
		drop, _ := qmfInt(l["droppedPresettledCount"])
		c.dropped += drop
		if l["linkDir"] != "in" {
			continue
		}
		acc, _ := qmfInt(l["acceptedCount"])
		pre, _ := qmfInt(l["presettledCount"])
		un, _ := qmfInt(l["unsettledCount"])
		c.settled, c.unsettled, c.ins = c.settled+acc+pre, c.unsettled+un, c.ins+1
	}
	return c
}

// connectorsDown lists the connectors not yet connected, with the
// router's message for each.
func connectorsDown(rows []map[string]any) []string {
	var down []string
	for _, r := range rows {
		if st, _ := r["connectionStatus"].(string); st != "SUCCESS" {
			msg, _ := r["connectionMsg"].(string)
			down = append(down, fmt.Sprintf("%v: %s %s", r["name"], st, strings.TrimSpace(msg)))
		}
	}
	return down
}

// autoLinksFailed lists the auto-links of addrs whose attach failed, with
// the broker's error: what no waiting will cure.
func autoLinksFailed(rows []map[string]any, addrs map[string]bool) []string {
	var failed []string
	for _, r := range rows {
		addr, _ := r["address"].(string)
		if addrs[addr] && r["operStatus"] == "failed" {
			failed = append(failed, fmt.Sprintf("%s %v: %v", addr, r["direction"], r["lastError"]))
		}
	}
	return failed
}
