package amqp

import (
	"errors"
	"testing"
)

// A reload's new settings: a connection Failed on authentication dials
// again with them; an Operational one is dropped and re-dialled at once
// (no backoff) to the new URL; an invalid configuration changes nothing.
func TestConnReconfigureRedials(t *testing.T) {
	clk := newFakeClock()
	tr1, tr2 := newFakeTransport(), newFakeTransport()
	s := &script{steps: []any{errors.New("SASL PLAIN auth failed with code 0x1"), tr1, tr2}}
	c, states := testConn(t, []string{"amqp://h1:5672"}, s, clk)
	waitState(t, states, Failed)

	if err := c.Reconfigure(BrokerConfig{Name: "b1", URLs: []string{"ftp://h2"}, Profile: "generic"}); err == nil {
		t.Fatal("an invalid URL was taken")
	}
	if err := c.Reconfigure(BrokerConfig{Name: "other", URLs: []string{"amqp://h2:5672"}, Profile: "generic"}); err == nil {
		t.Fatal("a new name was taken")
	}
	if got := c.Config().URLs[0]; got != "amqp://h1:5672" {
		t.Fatalf("refused settings changed the config: %s", got)
	}
	if err := c.Reconfigure(BrokerConfig{Name: "b1", URLs: []string{"amqp://h2:5672"}, Profile: "generic", Username: "u", Password: "new"}); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, states, Operational)
	if st.URL != "amqp://h2:5672" || st.Generation != 1 {
		t.Fatalf("after reconfigure from Failed: %+v", st)
	}
	if err := c.Reconfigure(BrokerConfig{Name: "b1", URLs: []string{"amqp://h3:5672"}, Profile: "generic"}); err != nil {
		t.Fatal(err)
	}
	st = waitState(t, states, Waiting)
	if !errors.Is(st.LastError, errReconfigured) {
		t.Fatalf("drop cause: %v", st.LastError)
	}
	st = waitState(t, states, Operational)
	if st.URL != "amqp://h3:5672" || st.Generation != 2 {
		t.Fatalf("after reconfigure while Operational: %+v", st)
	}
	select {
	case d := <-clk.delays:
		t.Fatalf("a reconfigure waited %v before re-dialling", d)
	default:
	}
	if n := s.dialCount(); n != 3 {
		t.Fatalf("%d dials, want 3", n)
	}
}

// The fingerprints: equal settings sum alike, a changed password does
// not show in the sum; a management API borrowing the AMQP credentials
// changes with them.
func TestBrokerFingerprints(t *testing.T) {
	a := BrokerConfig{Name: "b", URLs: []string{"amqp://h:5672"}, Profile: "rabbitmq", Username: "u", Password: "secret-one"}
	b := a
	b.Password = "secret-two"
	fa, err := a.DialFingerprint()
	if err != nil {
		t.Fatal(err)
	}
	fa2, _ := a.DialFingerprint()
	fb, _ := b.DialFingerprint()
	if fa != fa2 || fa == fb || contains(fa, "secret") {
		t.Fatalf("dial sums %s %s %s", fa, fa2, fb)
	}
	if a.ManagementFingerprint() == b.ManagementFingerprint() {
		t.Fatal("the management API borrows the password: its sum must change")
	}
	a.Management.Username, a.Management.Password = "m", "mp"
	b.Management = a.Management
	if a.ManagementFingerprint() != b.ManagementFingerprint() {
		t.Fatal("own management credentials: the AMQP password is not the API's")
	}
	c := a
	c.TLS.CAFile = "/nonexistent/ca.pem"
	if _, err := c.DialFingerprint(); err == nil {
		t.Fatal("an unreadable TLS file was summed")
	}
}
