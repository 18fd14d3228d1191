package wire

// fields builds a performative's list, leaving out trailing fields at
// their defaults (part 1.4: trailing nulls may be omitted).
type fields struct {
	b       []byte
	mark    Compound
	n       int
	keepLen int
	keepN   int
}

func beginFields(b []byte, desc uint64) fields {
	b = AppendDescriptor(b, desc)
	b, mark := BeginList(b)
	return fields{b: b, mark: mark, keepLen: len(b)}
}

func (f *fields) kept() {
	f.n++
	f.keepLen, f.keepN = len(f.b), f.n
}

func (f *fields) null() {
	f.b = AppendNull(f.b)
	f.n++
}

func (f *fields) end() []byte {
	return EndList(f.b[:f.keepLen], f.mark, f.keepN)
}

func (f *fields) uint(v uint32, present bool) {
	if !present {
		f.null()
		return
	}
	f.b = AppendUint(f.b, v)
	f.kept()
}

func (f *fields) ulong(v uint64, present bool) {
	if !present {
		f.null()
		return
	}
	f.b = AppendUlong(f.b, v)
	f.kept()
}

func (f *fields) ubyte(v uint8, present bool) {
	if !present {
		f.null()
		return
	}
	f.b = AppendUbyte(f.b, v)
	f.kept()
}

func (f *fields) ushort(v uint16, present bool) {
	if !present {
		f.null()
		return
	}
	f.b = AppendUshort(f.b, v)
	f.kept()
}

// boolean writes true, or false only when required (otherwise a false
// is the default and left out).
func (f *fields) boolean(v, required bool) {
	if !v && !required {
		f.null()
		return
	}
	f.b = AppendBool(f.b, v)
	f.kept()
}

func (f *fields) str(s string, required bool) {
	if s == "" && !required {
		f.null()
		return
	}
	f.b = AppendString(f.b, s)
	f.kept()
}

func (f *fields) sym(s string) {
	if s == "" {
		f.null()
		return
	}
	f.b = AppendSymbol(f.b, s)
	f.kept()
}

func (f *fields) binary(v []byte, required bool) {
	if v == nil && !required {
		f.null()
		return
	}
	f.b = AppendBinary(f.b, v)
	f.kept()
}

func (f *fields) syms(v []string) {
	if len(v) == 0 {
		f.null()
		return
	}
	f.b = AppendSymbolArray(f.b, v)
	f.kept()
}

// raw writes a field already encoded (carried as it came).
func (f *fields) raw(v []byte) {
	if len(v) == 0 {
		f.null()
		return
	}
	f.b = append(f.b, v...)
	f.kept()
}

func (f *fields) err(e *Error) {
	if e == nil {
		f.null()
		return
	}
	f.b = AppendError(f.b, e)
	f.kept()
}

func (f *fields) state(s *DeliveryState) {
	if s.Kind == StateNone {
		f.null()
		return
	}
	f.b = AppendState(f.b, s)
	f.kept()
}

// AppendError appends an error (part 2.8.14).
func AppendError(b []byte, e *Error) []byte {
	f := beginFields(b, DescError)
	f.b = AppendSymbol(f.b, e.Condition)
	f.kept()
	f.str(e.Description, false)
	f.raw(e.Info)
	return f.end()
}

// AppendState appends a delivery state.
func AppendState(b []byte, s *DeliveryState) []byte {
	switch s.Kind {
	case StateAccepted:
		return append(AppendDescriptor(b, DescAccepted), codeList0)
	case StateReleased:
		return append(AppendDescriptor(b, DescReleased), codeList0)
	case StateRejected:
		f := beginFields(b, DescRejected)
		f.err(s.Error)
		return f.end()
	case StateModified:
		f := beginFields(b, DescModified)
		f.boolean(s.DeliveryFailed, false)
		f.boolean(s.UndeliverableHere, false)
		f.raw(s.Annotations)
		return f.end()
	case StateReceived:
		f := beginFields(b, DescReceived)
		f.uint(s.SectionNumber, true)
		f.ulong(s.SectionOffset, true)
		return f.end()
	}
	return AppendNull(b)
}

// AppendOpen appends an open performative.
func AppendOpen(b []byte, o *Open) []byte {
	f := beginFields(b, DescOpen)
	f.str(o.ContainerID, true)
	f.str(o.Hostname, false)
	f.uint(o.MaxFrameSize, o.MaxFrameSize != ^uint32(0))
	f.ushort(o.ChannelMax, o.ChannelMax != 0xffff)
	f.uint(o.IdleTimeout, o.IdleTimeout != 0)
	f.syms(o.OutgoingLocales)
	f.syms(o.IncomingLocales)
	f.syms(o.OfferedCapabilities)
	f.syms(o.DesiredCapabilities)
	f.raw(o.Properties)
	return f.end()
}

// AppendBegin appends a begin performative.
func AppendBegin(b []byte, p *Begin) []byte {
	f := beginFields(b, DescBegin)
	f.ushort(p.RemoteChannel, p.HasRemoteChannel)
	f.uint(p.NextOutgoingID, true)
	f.uint(p.IncomingWindow, true)
	f.uint(p.OutgoingWindow, true)
	f.uint(p.HandleMax, p.HandleMax != ^uint32(0))
	f.syms(p.OfferedCapabilities)
	f.syms(p.DesiredCapabilities)
	f.raw(p.Properties)
	return f.end()
}

// AppendAttach appends an attach performative.
func AppendAttach(b []byte, a *Attach) []byte {
	f := beginFields(b, DescAttach)
	f.str(a.Name, true)
	f.uint(a.Handle, true)
	f.boolean(a.Role, true)
	f.ubyte(a.SndSettleMode, a.SndSettleMode != SndMixed)
	f.ubyte(a.RcvSettleMode, a.RcvSettleMode != RcvFirst)
	if a.Source != nil {
		f.b = AppendSource(f.b, a.Source)
		f.kept()
	} else {
		f.null()
	}
	if a.Target != nil {
		f.b = AppendTarget(f.b, a.Target)
		f.kept()
	} else {
		f.null()
	}
	f.raw(a.Unsettled)
	f.boolean(a.IncompleteUnsettled, false)
	f.uint(a.InitialDeliveryCount, !a.Role)
	f.ulong(a.MaxMessageSize, a.MaxMessageSize != 0)
	f.syms(a.OfferedCapabilities)
	f.syms(a.DesiredCapabilities)
	f.raw(a.Properties)
	return f.end()
}

// AppendSource appends a source terminus.
func AppendSource(b []byte, s *Source) []byte {
	f := beginFields(b, DescSource)
	f.str(s.Address, false)
	f.uint(s.Durable, s.Durable != 0)
	f.sym(s.ExpiryPolicy)
	f.uint(s.Timeout, s.Timeout != 0)
	f.boolean(s.Dynamic, false)
	f.raw(s.DynamicNodeProperties)
	f.sym(s.DistributionMode)
	f.raw(s.Filter)
	f.raw(s.DefaultOutcome)
	f.syms(s.Outcomes)
	f.syms(s.Capabilities)
	return f.end()
}

// AppendTarget appends a target terminus.
func AppendTarget(b []byte, t *Target) []byte {
	f := beginFields(b, DescTarget)
	f.str(t.Address, false)
	f.uint(t.Durable, t.Durable != 0)
	f.sym(t.ExpiryPolicy)
	f.uint(t.Timeout, t.Timeout != 0)
	f.boolean(t.Dynamic, false)
	f.raw(t.DynamicNodeProperties)
	f.syms(t.Capabilities)
	return f.end()
}

// AppendFlow appends a flow performative.
func AppendFlow(b []byte, p *Flow) []byte {
	f := beginFields(b, DescFlow)
	f.uint(p.NextIncomingID, p.HasNextIncomingID)
	f.uint(p.IncomingWindow, true)
	f.uint(p.NextOutgoingID, true)
	f.uint(p.OutgoingWindow, true)
	f.uint(p.Handle, p.HasHandle)
	f.uint(p.DeliveryCount, p.HasDeliveryCount)
	f.uint(p.LinkCredit, p.HasLinkCredit)
	f.uint(p.Available, p.HasAvailable)
	f.boolean(p.Drain, false)
	f.boolean(p.Echo, false)
	f.raw(p.Properties)
	return f.end()
}

// AppendTransfer appends a transfer performative (the payload follows).
func AppendTransfer(b []byte, t *Transfer) []byte {
	f := beginFields(b, DescTransfer)
	f.uint(t.Handle, true)
	f.uint(t.DeliveryID, t.HasDeliveryID)
	f.binary(t.DeliveryTag, false)
	f.uint(t.MessageFormat, t.HasDeliveryID)
	f.boolean(t.Settled, false)
	f.boolean(t.More, false)
	f.ubyte(t.RcvSettleMode, t.HasRcvSettleMode)
	f.state(&t.State)
	f.boolean(t.Resume, false)
	f.boolean(t.Aborted, false)
	f.boolean(t.Batchable, false)
	return f.end()
}

// AppendDisposition appends a disposition performative.
func AppendDisposition(b []byte, p *Disposition) []byte {
	f := beginFields(b, DescDisposition)
	f.boolean(p.Role, true)
	f.uint(p.First, true)
	f.uint(p.Last, p.HasLast)
	f.boolean(p.Settled, false)
	f.state(&p.State)
	f.boolean(p.Batchable, false)
	return f.end()
}

// AppendDetach appends a detach performative.
func AppendDetach(b []byte, p *Detach) []byte {
	f := beginFields(b, DescDetach)
	f.uint(p.Handle, true)
	f.boolean(p.Closed, false)
	f.err(p.Error)
	return f.end()
}

// AppendEnd appends an end performative.
func AppendEnd(b []byte, p *End) []byte {
	f := beginFields(b, DescEnd)
	f.err(p.Error)
	return f.end()
}

// AppendClose appends a close performative.
func AppendClose(b []byte, p *Close) []byte {
	f := beginFields(b, DescClose)
	f.err(p.Error)
	return f.end()
}

// AppendSASLMechanisms appends sasl-mechanisms.
func AppendSASLMechanisms(b []byte, p *SASLMechanisms) []byte {
	f := beginFields(b, DescSASLMechanisms)
	f.b = AppendSymbolArray(f.b, p.Mechanisms)
	f.kept()
	return f.end()
}

// AppendSASLInit appends sasl-init.
func AppendSASLInit(b []byte, p *SASLInit) []byte {
	f := beginFields(b, DescSASLInit)
	f.b = AppendSymbol(f.b, p.Mechanism)
	f.kept()
	f.binary(p.InitialResponse, false)
	f.str(p.Hostname, false)
	return f.end()
}

// AppendSASLOutcome appends sasl-outcome.
func AppendSASLOutcome(b []byte, p *SASLOutcome) []byte {
	f := beginFields(b, DescSASLOutcome)
	f.ubyte(p.Code, true)
	f.binary(p.AdditionalData, false)
	return f.end()
}
