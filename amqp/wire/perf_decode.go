package wire

// Decoding of the performatives. Each reads a described list whose
// descriptor the caller has already read (Decoder.Descriptor), leaving
// absent fields at their defaults; a field the spec makes mandatory and
// the peer left out is an error naming the field.

func (d *Decoder) uintOr(l *ListCursor, def uint32) (uint32, bool) {
	if !l.Next() || d.IsNull() {
		return def, false
	}
	return d.Uint(), true
}

func (d *Decoder) boolOr(l *ListCursor) bool {
	if !l.Next() || d.IsNull() {
		return false
	}
	return d.Bool()
}

func (d *Decoder) strField(l *ListCursor) string {
	if !l.Next() {
		return ""
	}
	return d.String()
}

func (d *Decoder) symField(l *ListCursor) string {
	if !l.Next() {
		return ""
	}
	return d.Symbol()
}

func (d *Decoder) symsField(l *ListCursor) []string {
	if !l.Next() {
		return nil
	}
	return d.Symbols()
}

// rawField returns a field's encoding (nil for null or absent), copied
// so it outlives the frame.
func (d *Decoder) rawField(l *ListCursor) []byte {
	if !l.Next() || d.IsNull() {
		return nil
	}
	return append([]byte(nil), d.Raw()...)
}

func (d *Decoder) required(what string, present bool) {
	if !present {
		d.fail("mandatory field %s missing", what)
	}
}

// ErrorValue reads an error (or null) after its descriptor.
func (d *Decoder) ErrorValue() *Error {
	if d.IsNull() {
		return nil
	}
	if desc := d.Descriptor(); desc != DescError {
		d.fail("error expected, descriptor 0x%x", desc)
		return nil
	}
	l := d.List()
	e := &Error{}
	d.required("error.condition", l.Next())
	e.Condition = d.Symbol()
	e.Description = d.strField(&l)
	e.Info = d.rawField(&l)
	d.Done(&l)
	return e
}

func (d *Decoder) errorField(l *ListCursor) *Error {
	if !l.Next() {
		return nil
	}
	return d.ErrorValue()
}

// State reads a delivery state (or null) into s.
func (d *Decoder) State(s *DeliveryState) {
	*s = DeliveryState{}
	if d.IsNull() {
		return
	}
	desc := d.Descriptor()
	l := d.List()
	switch desc {
	case DescAccepted:
		s.Kind = StateAccepted
	case DescReleased:
		s.Kind = StateReleased
	case DescRejected:
		s.Kind = StateRejected
		s.Error = d.errorField(&l)
	case DescModified:
		s.Kind = StateModified
		s.DeliveryFailed = d.boolOr(&l)
		s.UndeliverableHere = d.boolOr(&l)
		s.Annotations = d.rawField(&l)
	case DescReceived:
		s.Kind = StateReceived
		s.SectionNumber, _ = d.uintOr(&l, 0)
		if l.Next() && !d.IsNull() {
			s.SectionOffset = d.Ulong()
		}
	default:
		d.fail("unknown delivery state descriptor 0x%x", desc)
	}
	d.Done(&l)
}

// Open reads an open performative.
func (d *Decoder) Open(o *Open) {
	l := d.List()
	*o = Open{}
	d.required("open.container-id", l.Next())
	o.ContainerID = string(d.StringBytes())
	o.Hostname = d.strField(&l)
	o.MaxFrameSize, _ = d.uintOr(&l, ^uint32(0))
	o.ChannelMax = 0xffff
	if l.Next() && !d.IsNull() {
		o.ChannelMax = d.Ushort()
	}
	o.IdleTimeout, _ = d.uintOr(&l, 0)
	o.OutgoingLocales = d.symsField(&l)
	o.IncomingLocales = d.symsField(&l)
	o.OfferedCapabilities = d.symsField(&l)
	o.DesiredCapabilities = d.symsField(&l)
	o.Properties = d.rawField(&l)
	d.Done(&l)
}

// Begin reads a begin performative.
func (d *Decoder) Begin(p *Begin) {
	l := d.List()
	*p = Begin{}
	if l.Next() && !d.IsNull() {
		p.RemoteChannel, p.HasRemoteChannel = d.Ushort(), true
	}
	var ok bool
	p.NextOutgoingID, ok = d.uintOr(&l, 0)
	d.required("begin.next-outgoing-id", ok)
	p.IncomingWindow, ok = d.uintOr(&l, 0)
	d.required("begin.incoming-window", ok)
	p.OutgoingWindow, ok = d.uintOr(&l, 0)
	d.required("begin.outgoing-window", ok)
	p.HandleMax, _ = d.uintOr(&l, ^uint32(0))
	p.OfferedCapabilities = d.symsField(&l)
	p.DesiredCapabilities = d.symsField(&l)
	p.Properties = d.rawField(&l)
	d.Done(&l)
}

// Attach reads an attach performative.
func (d *Decoder) Attach(a *Attach) {
	l := d.List()
	*a = Attach{SndSettleMode: SndMixed}
	d.required("attach.name", l.Next())
	a.Name = string(d.StringBytes())
	var ok bool
	a.Handle, ok = d.uintOr(&l, 0)
	d.required("attach.handle", ok)
	d.required("attach.role", l.Next())
	a.Role = d.Bool()
	if l.Next() && !d.IsNull() {
		a.SndSettleMode = d.Ubyte()
	}
	if l.Next() && !d.IsNull() {
		a.RcvSettleMode = d.Ubyte()
	}
	if l.Next() && !d.IsNull() {
		a.Source = d.source()
	}
	if l.Next() && !d.IsNull() {
		a.Target = d.target()
	}
	a.Unsettled = d.rawField(&l)
	a.IncompleteUnsettled = d.boolOr(&l)
	a.InitialDeliveryCount, _ = d.uintOr(&l, 0)
	if l.Next() && !d.IsNull() {
		a.MaxMessageSize = d.Ulong()
	}
	a.OfferedCapabilities = d.symsField(&l)
	a.DesiredCapabilities = d.symsField(&l)
	a.Properties = d.rawField(&l)
	d.Done(&l)
	if a.SndSettleMode > SndMixed || a.RcvSettleMode > RcvSecond {
		d.fail("attach: settle modes %d/%d out of range", a.SndSettleMode, a.RcvSettleMode)
	}
}

func (d *Decoder) source() *Source {
	if desc := d.Descriptor(); desc != DescSource {
		d.fail("source expected, descriptor 0x%x", desc)
		return nil
	}
	l := d.List()
	s := &Source{}
	s.Address = d.addressField(&l)
	s.Durable, _ = d.uintOr(&l, 0)
	s.ExpiryPolicy = d.symField(&l)
	s.Timeout, _ = d.uintOr(&l, 0)
	s.Dynamic = d.boolOr(&l)
	s.DynamicNodeProperties = d.rawField(&l)
	s.DistributionMode = d.symField(&l)
	s.Filter = d.rawField(&l)
	s.DefaultOutcome = d.rawField(&l)
	s.Outcomes = d.symsField(&l)
	s.Capabilities = d.symsField(&l)
	d.Done(&l)
	return s
}

func (d *Decoder) target() *Target {
	if desc := d.Descriptor(); desc != DescTarget {
		d.fail("target expected, descriptor 0x%x", desc)
		return nil
	}
	l := d.List()
	t := &Target{}
	t.Address = d.addressField(&l)
	t.Durable, _ = d.uintOr(&l, 0)
	t.ExpiryPolicy = d.symField(&l)
	t.Timeout, _ = d.uintOr(&l, 0)
	t.Dynamic = d.boolOr(&l)
	t.DynamicNodeProperties = d.rawField(&l)
	t.Capabilities = d.symsField(&l)
	d.Done(&l)
	return t
}

// addressField reads an address: a string, or a symbol from peers that
// send one.
func (d *Decoder) addressField(l *ListCursor) string {
	if !l.Next() || d.IsNull() {
		return ""
	}
	if c := d.Peek(); c == codeSym8 || c == codeSym32 {
		return string(d.SymbolBytes())
	}
	return string(d.StringBytes())
}

// Flow reads a flow performative.
func (d *Decoder) Flow(p *Flow) {
	l := d.List()
	*p = Flow{}
	var ok bool
	p.NextIncomingID, p.HasNextIncomingID = d.uintOr(&l, 0)
	p.IncomingWindow, ok = d.uintOr(&l, 0)
	d.required("flow.incoming-window", ok)
	p.NextOutgoingID, ok = d.uintOr(&l, 0)
	d.required("flow.next-outgoing-id", ok)
	p.OutgoingWindow, ok = d.uintOr(&l, 0)
	d.required("flow.outgoing-window", ok)
	p.Handle, p.HasHandle = d.uintOr(&l, 0)
	p.DeliveryCount, p.HasDeliveryCount = d.uintOr(&l, 0)
	p.LinkCredit, p.HasLinkCredit = d.uintOr(&l, 0)
	p.Available, p.HasAvailable = d.uintOr(&l, 0)
	p.Drain = d.boolOr(&l)
	p.Echo = d.boolOr(&l)
	if l.Next() && !d.IsNull() {
		p.Properties = d.Raw() // aliases the frame: flow properties are not kept
	}
	d.Done(&l)
}

// Transfer reads a transfer performative and its payload (the rest of
// the frame). Nothing is allocated unless the state is rejected or
// modified.
func (d *Decoder) Transfer(t *Transfer) {
	l := d.List()
	*t = Transfer{}
	var ok bool
	t.Handle, ok = d.uintOr(&l, 0)
	d.required("transfer.handle", ok)
	t.DeliveryID, t.HasDeliveryID = d.uintOr(&l, 0)
	if l.Next() && !d.IsNull() {
		t.DeliveryTag = d.Binary()
	}
	t.MessageFormat, _ = d.uintOr(&l, 0)
	t.Settled = d.boolOr(&l)
	t.More = d.boolOr(&l)
	if l.Next() && !d.IsNull() {
		t.RcvSettleMode, t.HasRcvSettleMode = d.Ubyte(), true
	}
	if l.Next() {
		d.State(&t.State)
	}
	t.Resume = d.boolOr(&l)
	t.Aborted = d.boolOr(&l)
	t.Batchable = d.boolOr(&l)
	d.Done(&l)
	if d.err == nil {
		t.Payload = d.b[d.off:len(d.b):len(d.b)]
		d.off = len(d.b)
	}
}

// Disposition reads a disposition performative.
func (d *Decoder) Disposition(p *Disposition) {
	l := d.List()
	*p = Disposition{}
	d.required("disposition.role", l.Next())
	p.Role = d.Bool()
	var ok bool
	p.First, ok = d.uintOr(&l, 0)
	d.required("disposition.first", ok)
	p.Last, p.HasLast = d.uintOr(&l, 0)
	p.Settled = d.boolOr(&l)
	if l.Next() {
		d.State(&p.State)
	}
	p.Batchable = d.boolOr(&l)
	d.Done(&l)
}

// Detach reads a detach performative.
func (d *Decoder) Detach(p *Detach) {
	l := d.List()
	*p = Detach{}
	var ok bool
	p.Handle, ok = d.uintOr(&l, 0)
	d.required("detach.handle", ok)
	p.Closed = d.boolOr(&l)
	p.Error = d.errorField(&l)
	d.Done(&l)
}

// End reads an end performative.
func (d *Decoder) End(p *End) {
	l := d.List()
	p.Error = d.errorField(&l)
	d.Done(&l)
}

// Close reads a close performative.
func (d *Decoder) Close(p *Close) {
	l := d.List()
	p.Error = d.errorField(&l)
	d.Done(&l)
}

// SASLMechanisms reads sasl-mechanisms.
func (d *Decoder) SASLMechanisms(p *SASLMechanisms) {
	l := d.List()
	d.required("sasl-mechanisms.sasl-server-mechanisms", l.Next())
	p.Mechanisms = d.Symbols()
	d.Done(&l)
}

// SASLInit reads sasl-init.
func (d *Decoder) SASLInit(p *SASLInit) {
	l := d.List()
	d.required("sasl-init.mechanism", l.Next())
	p.Mechanism = d.Symbol()
	if l.Next() && !d.IsNull() {
		p.InitialResponse = append([]byte(nil), d.Binary()...)
	}
	p.Hostname = d.strField(&l)
	d.Done(&l)
}

// SASLOutcome reads sasl-outcome.
func (d *Decoder) SASLOutcome(p *SASLOutcome) {
	l := d.List()
	d.required("sasl-outcome.code", l.Next())
	p.Code = d.Ubyte()
	if l.Next() && !d.IsNull() {
		p.AdditionalData = append([]byte(nil), d.Binary()...)
	}
	d.Done(&l)
}
