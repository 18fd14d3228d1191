package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestValueRoundTrip(t *testing.T) {
	big := strings.Repeat("x", 300)
	values := []any{
		nil, true, false, uint8(7), uint16(65000), uint32(0), uint32(200), uint32(1 << 20),
		uint64(0), uint64(255), uint64(1 << 40), int8(-3), int16(-300), int32(-5), int32(1 << 20),
		int64(-7), int64(-1 << 40), float32(1.5), 2.25, "héllo", big, Symbol("sym"), Symbol(big),
		[]byte{1, 2, 3}, []byte(big), Timestamp(1700000000000), UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		[]any{}, []any{uint32(1), "a", nil}, []any{big, []any{Symbol("nested")}},
		Map{{Symbol("k"), "v"}, {uint64(5), []any{true}}},
		Array{Symbol("a"), Symbol("b")}, Array{int32(1), int32(-1)}, Array{},
		Described{Descriptor: uint64(0x77), Value: "body"},
		Described{Descriptor: Symbol("com.example:x"), Value: Map{}},
	}
	for _, v := range values {
		enc, err := AppendValue(nil, v)
		if err != nil {
			t.Fatalf("encode %#v: %v", v, err)
		}
		d := NewDecoder(enc)
		got := d.Value()
		if d.Err() != nil {
			t.Fatalf("decode %#v (% x): %v", v, enc, d.Err())
		}
		if d.Len() != 0 {
			t.Fatalf("decode %#v left %d bytes", v, d.Len())
		}
		want := v
		if a, ok := v.(Array); ok && len(a) == 0 {
			want = Array{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip: got %#v, want %#v", got, want)
		}
		d = NewDecoder(enc)
		d.Skip()
		if d.Err() != nil || d.Len() != 0 {
			t.Fatalf("skip %#v: %v, %d left", v, d.Err(), d.Len())
		}
	}
}

func TestSmallestForms(t *testing.T) {
	cases := []struct {
		got, want []byte
	}{
		{AppendUint(nil, 0), []byte{0x43}},
		{AppendUint(nil, 9), []byte{0x52, 9}},
		{AppendUlong(nil, 0), []byte{0x44}},
		{AppendUlong(nil, 0x53), []byte{0x53, 0x53}},
		{AppendInt(nil, -1), []byte{0x54, 0xff}},
		{AppendLong(nil, 1), []byte{0x55, 1}},
		{EndList(BeginListT()), []byte{0x45}},
	}
	for i, c := range cases {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("case %d: % x, want % x", i, c.got, c.want)
		}
	}
}

func BeginListT() ([]byte, Compound, int) {
	b, m := BeginList(nil)
	return b, m, 0
}

func TestDecodeRefusesLies(t *testing.T) {
	cases := map[string][]byte{
		"list32 claiming 4 GiB":        {0xd0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1},
		"list8 count beyond its bytes": {0xc0, 2, 200, 0x40},
		"string beyond the input":      {0xa1, 10, 'a'},
		"map with an odd count":        {0xc1, 2, 1, 0x40},
		"unknown type code":            {0x3f},
		"element overruns its list":    {0xc0, 2, 1, 0xa1, 5, 'a', 'b', 'c', 'd', 'e'},
	}
	for name, b := range cases {
		d := NewDecoder(b)
		d.Value()
		if !errors.Is(d.Err(), ErrDecode) {
			t.Errorf("%s: err %v, want a decode error", name, d.Err())
		}
	}
	deep := bytes.Repeat([]byte{0xc0, 0xff, 1}, MaxDepth+2)
	d := NewDecoder(deep)
	d.Value()
	if d.Err() == nil {
		t.Error("nesting beyond MaxDepth accepted")
	}
}

func TestFrameHeaderLimits(t *testing.T) {
	var h [8]byte
	binary.BigEndian.PutUint32(h[:], 0xffffffff)
	h[4] = 2
	_, err := ParseFrameHeader(h, 64<<10)
	if !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), "max-frame-size 65536") {
		t.Fatalf("4 GiB frame: %v", err)
	}
	// The reader refuses it before reading or allocating the body.
	r := NewFrameReader(bytes.NewReader(h[:]), 64<<10)
	if _, _, err := r.Next(); !errors.Is(err, ErrFrame) {
		t.Fatalf("reader: %v", err)
	}
	if len(r.buf) > readChunk {
		t.Fatalf("reader allocated %d bytes for a refused frame", len(r.buf))
	}
	for name, hdr := range map[string][8]byte{
		"short":     {0, 0, 0, 4, 2, 0, 0, 0},
		"doff 1":    {0, 0, 0, 8, 1, 0, 0, 0},
		"doff past": {0, 0, 0, 8, 3, 0, 0, 0},
		"type 7":    {0, 0, 0, 8, 2, 7, 0, 0},
	} {
		if _, err := ParseFrameHeader(hdr, 512); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestFrameReaderSplitsAndJoins(t *testing.T) {
	var stream []byte
	var want []Transfer
	for i := 0; i < 50; i++ {
		b, mark := BeginFrame(stream, FrameAMQP, uint16(i))
		tr := Transfer{Handle: uint32(i), DeliveryID: uint32(i), HasDeliveryID: true, DeliveryTag: []byte{byte(i)}}
		b = AppendTransfer(b, &tr)
		tr.Payload = bytes.Repeat([]byte{byte(i)}, i*40)
		b = append(b, tr.Payload...)
		stream = EndFrame(b, mark)
		want = append(want, tr)
		stream = AppendHeartbeat(stream)
	}
	r := NewFrameReader(&trickle{b: stream}, 4096)
	for i := 0; i < 50; i++ {
		h, body, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if h.Channel != uint16(i) {
			t.Fatalf("frame %d on channel %d", i, h.Channel)
		}
		d := NewDecoder(body)
		if desc := d.Descriptor(); desc != DescTransfer {
			t.Fatalf("descriptor %x", desc)
		}
		var tr Transfer
		d.Transfer(&tr)
		if d.Err() != nil || tr.DeliveryID != uint32(i) || !bytes.Equal(tr.Payload, want[i].Payload) {
			t.Fatalf("frame %d: %v %+v", i, d.Err(), tr)
		}
		if _, body, err := r.Next(); err != nil || len(body) != 0 {
			t.Fatalf("heartbeat %d: %v %d", i, err, len(body))
		}
	}
}

// trickle returns a few bytes per Read, as a slow socket may.
type trickle struct {
	b []byte
	n int
}

func (t *trickle) Read(p []byte) (int, error) {
	t.n++
	k := min(len(p), len(t.b), 1+t.n%97)
	copy(p, t.b[:k])
	t.b = t.b[k:]
	return k, nil
}
