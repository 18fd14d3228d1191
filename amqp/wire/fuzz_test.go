package wire

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzFrame feeds arbitrary bytes to the frame reader and decodes every
// frame it yields as a performative. Nothing may panic, and the reader's
// buffer never exceeds the frame limit.
func FuzzFrame(f *testing.F) {
	for _, p := range [][]byte{
		AppendOpen(nil, &Open{ContainerID: "c", MaxFrameSize: 512}),
		AppendAttach(nil, &Attach{Name: "l", Source: &Source{Address: "a"}, Target: &Target{}}),
		AppendTransfer(nil, &Transfer{DeliveryID: 1, HasDeliveryID: true, DeliveryTag: []byte{1}}),
		AppendDisposition(nil, &Disposition{Role: true, First: 1, State: DeliveryState{Kind: StateAccepted}}),
		AppendFlow(nil, &Flow{IncomingWindow: 1, LinkCredit: 5, HasLinkCredit: true}),
		AppendDetach(nil, &Detach{Error: &Error{Condition: "x"}}),
		AppendSASLMechanisms(nil, &SASLMechanisms{Mechanisms: []string{"PLAIN"}}),
	} {
		b, mark := BeginFrame(nil, FrameAMQP, 0)
		f.Add(EndFrame(append(b, p...), mark))
	}
	const limit = 4096
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewFrameReader(bytes.NewReader(data), limit)
		for {
			_, body, err := r.Next()
			if err != nil {
				break
			}
			decodeAny(body)
		}
		if len(r.buf) > max(limit, readChunk) {
			t.Fatalf("reader buffer %d beyond its limit", len(r.buf))
		}
	})
}

func decodeAny(body []byte) {
	d := NewDecoder(body)
	if d.Len() == 0 {
		return
	}
	switch d.Descriptor() {
	case DescOpen:
		d.Open(&Open{})
	case DescBegin:
		d.Begin(&Begin{})
	case DescAttach:
		d.Attach(&Attach{})
	case DescFlow:
		d.Flow(&Flow{})
	case DescTransfer:
		d.Transfer(&Transfer{})
	case DescDisposition:
		d.Disposition(&Disposition{})
	case DescDetach:
		d.Detach(&Detach{})
	case DescEnd:
		d.End(&End{})
	case DescClose:
		d.Close(&Close{})
	case DescSASLMechanisms:
		d.SASLMechanisms(&SASLMechanisms{})
	case DescSASLInit:
		d.SASLInit(&SASLInit{})
	case DescSASLOutcome:
		d.SASLOutcome(&SASLOutcome{})
	default:
		d.Value()
	}
}

// FuzzSections scans arbitrary payloads and rewrites what scans: no
// panic, the bare message is kept byte for byte, and the result scans.
func FuzzSections(f *testing.F) {
	f.Add(message(f, Map{{Symbol("d"), "x"}}, Map{{Symbol("m"), uint32(1)}}, []byte("body")))
	f.Add(message(f, nil, nil, nil))
	f.Add([]byte{0x00, 0x53, 0x72, 0xc1, 0x03, 0x02, 0xa3, 0x00})
	f.Fuzz(func(t *testing.T, payload []byte) {
		if s, bad, err := ScanSectionsLenient(payload); err == nil {
			// What a dead-letter queue is sent: the bad section left out.
			if bad {
				s.MessageAnnotations = Span{}
			}
			out := AppendRewritten(nil, payload, &s, true, Annotated{Key: "x-fedrouter-reason", Value: AppendString(nil, "r")})
			if _, err := ScanSections(out); err != nil || !bytes.HasSuffix(out, payload[s.Bare:]) {
				t.Fatalf("dead-letter copy: %v", err)
			}
		}
		s, err := ScanSections(payload)
		if err != nil {
			return
		}
		s.Annotation(payload, "x-fedrouter-hops")
		out := AppendRewritten(nil, payload, &s, true, Annotated{Key: "x-fedrouter-hops", Value: AppendUint(nil, 3)})
		if !bytes.HasSuffix(out, payload[s.Bare:]) {
			t.Fatal("bare message changed")
		}
		s2, err := ScanSections(out)
		if err != nil {
			t.Fatalf("rewritten payload does not scan: %v", err)
		}
		if v, ok := s2.Annotation(out, "x-fedrouter-hops"); !ok || !bytes.Equal(v, AppendUint(nil, 3)) {
			t.Fatalf("annotation lost: %v % x", ok, v)
		}
	})
}

// FuzzSubject: setting the subject never panics; it either refuses the
// properties with an ErrDecode and leaves dst alone, or writes a message
// that scans, whose subject is the one set, whose other properties
// fields and other sections are byte for byte those received.
func FuzzSubject(f *testing.F) {
	f.Add(message(f, nil, Map{{Symbol("m"), uint32(1)}}, []byte("body")), "news.eu")
	f.Add(bareMessage(f, nil), "k")
	f.Add(bareMessage(f, []any{"id", nil, nil, "old", "reply"}), "")
	f.Add([]byte{0x00, 0x53, 0x73, 0xc0, 0x03, 0x02, 0x40, 0x40}, "k")
	f.Add([]byte{0x00, 0x53, 0x73, 0x45}, "k")
	f.Fuzz(func(t *testing.T, payload []byte, subject string) {
		s, err := ScanSections(payload)
		if err != nil {
			return
		}
		out, err := AppendRewrittenWithSubject([]byte("dst"), payload, &s, false, subject)
		if err != nil {
			if !errors.Is(err, ErrDecode) || string(out) != "dst" {
				t.Fatalf("refusal %v left dst % x", err, out)
			}
			return
		}
		out = out[3:]
		if !bytes.Equal(out[:s.Bare], payload[:s.Bare]) {
			t.Fatal("sections before the bare message changed")
		}
		s2, err := ScanSections(out)
		if err != nil || s2.Bare != s.Bare {
			t.Fatalf("rewritten payload does not scan: %v", err)
		}
		checkSubject(t, payload[s.Bare:], out[s.Bare:], subject)
	})
}
