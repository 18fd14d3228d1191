package wire

import (
	"reflect"
	"strings"
	"testing"
)

// decodeBody reads a performative encoded by enc and returns the
// decoder positioned after its descriptor.
func decodeBody(t *testing.T, enc []byte, want uint64) *Decoder {
	t.Helper()
	d := NewDecoder(enc)
	if desc := d.Descriptor(); desc != want {
		t.Fatalf("descriptor 0x%x, want 0x%x", desc, want)
	}
	return &d
}

func check(t *testing.T, d *Decoder, got, want any) {
	t.Helper()
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	if d.Len() != 0 {
		t.Fatalf("%d bytes left", d.Len())
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestPerformativesRoundTrip(t *testing.T) {
	info, _ := AppendValue(nil, Map{{Symbol("why"), "because"}})
	e := &Error{Condition: "amqp:not-found", Description: "no queue", Info: info}

	open := Open{ContainerID: "c1", Hostname: "h", MaxFrameSize: 512, ChannelMax: 9, IdleTimeout: 30000,
		OfferedCapabilities: []string{"ANONYMOUS-RELAY"}, Properties: info}
	d := decodeBody(t, AppendOpen(nil, &open), DescOpen)
	var o Open
	d.Open(&o)
	check(t, d, o, open)

	begin := Begin{RemoteChannel: 3, HasRemoteChannel: true, NextOutgoingID: 1, IncomingWindow: 100, OutgoingWindow: 200, HandleMax: 7}
	d = decodeBody(t, AppendBegin(nil, &begin), DescBegin)
	var b Begin
	d.Begin(&b)
	check(t, d, b, begin)

	attach := Attach{Name: "link", Handle: 4, Role: RoleReceiver, SndSettleMode: SndUnsettled, RcvSettleMode: RcvFirst,
		Source: &Source{Address: "/amq/queue/q", Durable: 2, ExpiryPolicy: "never", Filter: info, Outcomes: []string{"amqp:accepted:list"}},
		Target: &Target{Address: "t", Capabilities: []string{"queue"}}, MaxMessageSize: 1 << 20}
	d = decodeBody(t, AppendAttach(nil, &attach), DescAttach)
	var a Attach
	d.Attach(&a)
	check(t, d, a, attach)

	flow := Flow{NextIncomingID: 5, HasNextIncomingID: true, IncomingWindow: 10, NextOutgoingID: 6, OutgoingWindow: 11,
		Handle: 1, HasHandle: true, DeliveryCount: 99, HasDeliveryCount: true, LinkCredit: 1000, HasLinkCredit: true, Drain: true}
	d = decodeBody(t, AppendFlow(nil, &flow), DescFlow)
	var f Flow
	d.Flow(&f)
	check(t, d, f, flow)

	tr := Transfer{Handle: 1, DeliveryID: 70000, HasDeliveryID: true, DeliveryTag: []byte("tag"), Settled: true, More: true,
		State: DeliveryState{Kind: StateRejected, Error: e}, Payload: []byte{}}
	enc := AppendTransfer(nil, &tr)
	d = decodeBody(t, enc, DescTransfer)
	var got Transfer
	d.Transfer(&got)
	check(t, d, got, tr)

	for _, st := range []DeliveryState{{Kind: StateAccepted}, {Kind: StateReleased},
		{Kind: StateModified, DeliveryFailed: true, UndeliverableHere: true, Annotations: info},
		{Kind: StateReceived, SectionNumber: 1, SectionOffset: 2}} {
		disp := Disposition{Role: RoleReceiver, First: 1, Last: 9, HasLast: true, Settled: true, State: st}
		d = decodeBody(t, AppendDisposition(nil, &disp), DescDisposition)
		var p Disposition
		d.Disposition(&p)
		check(t, d, p, disp)
	}

	det := Detach{Handle: 2, Closed: true, Error: e}
	d = decodeBody(t, AppendDetach(nil, &det), DescDetach)
	var dt Detach
	d.Detach(&dt)
	check(t, d, dt, det)

	d = decodeBody(t, AppendEnd(nil, &End{Error: e}), DescEnd)
	var en End
	d.End(&en)
	check(t, d, en, End{Error: e})

	d = decodeBody(t, AppendClose(nil, &Close{}), DescClose)
	var cl Close
	d.Close(&cl)
	check(t, d, cl, Close{})
}

func TestSASLRoundTrip(t *testing.T) {
	m := SASLMechanisms{Mechanisms: []string{"PLAIN", "ANONYMOUS"}}
	d := decodeBody(t, AppendSASLMechanisms(nil, &m), DescSASLMechanisms)
	var gm SASLMechanisms
	d.SASLMechanisms(&gm)
	check(t, d, gm, m)

	in := SASLInit{Mechanism: "PLAIN", InitialResponse: []byte("\x00guest\x00guest"), Hostname: "h"}
	d = decodeBody(t, AppendSASLInit(nil, &in), DescSASLInit)
	var gi SASLInit
	d.SASLInit(&gi)
	check(t, d, gi, in)

	out := SASLOutcome{Code: SASLAuth, AdditionalData: []byte{1}}
	d = decodeBody(t, AppendSASLOutcome(nil, &out), DescSASLOutcome)
	var gout SASLOutcome
	d.SASLOutcome(&gout)
	check(t, d, gout, out)
}

func TestMandatoryFieldsNamed(t *testing.T) {
	b := AppendDescriptor(nil, DescBegin)
	b = append(b, codeList0)
	d := decodeBody(t, b, DescBegin)
	var p Begin
	d.Begin(&p)
	if d.Err() == nil || !strings.Contains(d.Err().Error(), "begin.next-outgoing-id") {
		t.Fatalf("err %v", d.Err())
	}
}
