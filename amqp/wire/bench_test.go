package wire

import (
	"bytes"
	"testing"
)

func transferFrame() []byte {
	b, mark := BeginFrame(nil, FrameAMQP, 1)
	b = AppendTransfer(b, &Transfer{Handle: 3, DeliveryID: 123456, HasDeliveryID: true, DeliveryTag: []byte{1, 2, 3, 4}})
	b = append(b, bytes.Repeat([]byte{7}, 256)...)
	return EndFrame(b, mark)
}

func BenchmarkDecodeTransfer(b *testing.B) {
	frame := transferFrame()
	var t Transfer
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		h, err := ParseFrameHeader([8]byte(frame), 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		d := NewDecoder(frame[h.DataOff*4:])
		if d.Descriptor() != DescTransfer {
			b.Fatal("descriptor")
		}
		d.Transfer(&t)
		if d.Err() != nil || len(t.Payload) != 256 {
			b.Fatal(d.Err())
		}
	}
}

func BenchmarkDecodeDisposition(b *testing.B) {
	enc := AppendDisposition(nil, &Disposition{Role: true, First: 1000, Last: 1999, HasLast: true, Settled: true, State: DeliveryState{Kind: StateAccepted}})
	var p Disposition
	b.ReportAllocs()
	for b.Loop() {
		d := NewDecoder(enc)
		d.Descriptor()
		d.Disposition(&p)
		if d.Err() != nil {
			b.Fatal(d.Err())
		}
	}
}

func BenchmarkDecodeFlow(b *testing.B) {
	enc := AppendFlow(nil, &Flow{NextIncomingID: 5, HasNextIncomingID: true, IncomingWindow: 5000, NextOutgoingID: 9, OutgoingWindow: 5000, Handle: 1, HasHandle: true, DeliveryCount: 77, HasDeliveryCount: true, LinkCredit: 2000, HasLinkCredit: true})
	var p Flow
	b.ReportAllocs()
	for b.Loop() {
		d := NewDecoder(enc)
		d.Descriptor()
		d.Flow(&p)
		if d.Err() != nil {
			b.Fatal(d.Err())
		}
	}
}

func BenchmarkEncodeTransfer(b *testing.B) {
	buf := make([]byte, 0, 1024)
	payload := bytes.Repeat([]byte{7}, 256)
	b.ReportAllocs()
	for b.Loop() {
		fb, mark := BeginFrame(buf[:0], FrameAMQP, 1)
		fb = AppendTransfer(fb, &Transfer{Handle: 3, DeliveryID: 123456, HasDeliveryID: true, DeliveryTag: []byte{1, 2, 3, 4}})
		buf = EndFrame(append(fb, payload...), mark)
	}
}
