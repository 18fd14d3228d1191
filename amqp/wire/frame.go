package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Frame types (part 2.3.1, 5.3.1).
const (
	FrameAMQP = 0x00
	FrameSASL = 0x01
)

// MinMaxFrameSize is the smallest max-frame-size a peer may set (part 2.7.1).
const MinMaxFrameSize = 512

// Protocol headers (part 2.2, 5.2.1).
var (
	ProtoAMQP = [8]byte{'A', 'M', 'Q', 'P', 0, 1, 0, 0}
	ProtoSASL = [8]byte{'A', 'M', 'Q', 'P', 3, 1, 0, 0}
	ProtoTLS  = [8]byte{'A', 'M', 'Q', 'P', 2, 1, 0, 0}
)

// ErrFrame is wrapped by every framing error.
var ErrFrame = errors.New("wire: frame")

// FrameHeader is the fixed 8 bytes before every frame.
type FrameHeader struct {
	Size    uint32 // the whole frame, header included
	DataOff uint8  // in 4-byte words, at least 2
	Type    uint8
	Channel uint16
}

// ParseFrameHeader checks a frame header against the largest frame this
// side accepts (its advertised max-frame-size) before anything is read
// or allocated for the body.
func ParseFrameHeader(b [8]byte, maxFrameSize uint32) (FrameHeader, error) {
	h := FrameHeader{
		Size:    binary.BigEndian.Uint32(b[0:4]),
		DataOff: b[4],
		Type:    b[5],
		Channel: binary.BigEndian.Uint16(b[6:8]),
	}
	switch {
	case h.Size > maxFrameSize:
		return h, fmt.Errorf("%w: a frame of %d bytes exceeds max-frame-size %d (part 2.7.1)", ErrFrame, h.Size, maxFrameSize)
	case h.Size < 8:
		return h, fmt.Errorf("%w: a frame of %d bytes is shorter than its header", ErrFrame, h.Size)
	case h.DataOff < 2:
		return h, fmt.Errorf("%w: data offset %d below the minimum 2 (part 2.3.1)", ErrFrame, h.DataOff)
	case uint32(h.DataOff)*4 > h.Size:
		return h, fmt.Errorf("%w: data offset %d words beyond the frame's %d bytes", ErrFrame, h.DataOff, h.Size)
	case h.Type != FrameAMQP && h.Type != FrameSASL:
		return h, fmt.Errorf("%w: unknown frame type 0x%02x", ErrFrame, h.Type)
	}
	return h, nil
}

// FrameReader reads frames from a stream into one reused buffer that
// grows up to the max-frame-size and no further.
type FrameReader struct {
	r      io.Reader
	max    uint32
	buf    []byte
	start  int    // first unread byte in buf
	end    int    // end of the bytes read into buf
	OnFill func() // called before each read from r (e.g. to set a deadline)
}

// readChunk is how much the reader asks the stream for at once (more
// than one small frame, so a burst of transfers costs few reads).
const readChunk = 64 << 10

// NewFrameReader returns a reader refusing frames over maxFrameSize.
func NewFrameReader(r io.Reader, maxFrameSize uint32) *FrameReader {
	return &FrameReader{r: r, max: maxFrameSize}
}

// SetMaxFrameSize changes the limit (after open is exchanged).
func (f *FrameReader) SetMaxFrameSize(n uint32) { f.max = n }

// ReadProtoHeader reads the 8-byte protocol header.
func (f *FrameReader) ReadProtoHeader() ([8]byte, error) {
	var h [8]byte
	if err := f.fill(8); err != nil {
		return h, err
	}
	copy(h[:], f.buf[f.start:f.start+8])
	f.start += 8
	return h, nil
}

// Next reads the next frame: its header and its body after the data
// offset (empty for a heartbeat). The body aliases the reader's buffer
// and is valid until the next call.
func (f *FrameReader) Next() (FrameHeader, []byte, error) {
	if err := f.fill(8); err != nil {
		return FrameHeader{}, nil, err
	}
	h, err := ParseFrameHeader([8]byte(f.buf[f.start:f.start+8]), f.max)
	if err != nil {
		return h, nil, err
	}
	if err := f.fill(int(h.Size)); err != nil {
		return h, nil, err
	}
	body := f.buf[f.start+int(h.DataOff)*4 : f.start+int(h.Size)]
	f.start += int(h.Size)
	return h, body, nil
}

// fill makes n bytes available at buf[start:], reading more from the
// stream. n is at most the max-frame-size already checked, so the
// buffer never grows past max(max-frame-size, readChunk).
func (f *FrameReader) fill(n int) error {
	if f.end-f.start >= n {
		return nil
	}
	if len(f.buf)-f.start < n {
		dst := f.buf
		if len(f.buf) < n {
			dst = make([]byte, max(n, readChunk))
		}
		copy(dst, f.buf[f.start:f.end])
		f.end -= f.start
		f.start = 0
		f.buf = dst
	}
	for f.end-f.start < n {
		if f.OnFill != nil {
			f.OnFill()
		}
		m, err := f.r.Read(f.buf[f.end:])
		f.end += m
		if err != nil && f.end-f.start < n {
			return err
		}
	}
	return nil
}

// BeginFrame starts a frame in b; append its performative (and payload),
// then EndFrame.
func BeginFrame(b []byte, typ uint8, channel uint16) ([]byte, int) {
	mark := len(b)
	return append(b, 0, 0, 0, 0, 2, typ, byte(channel>>8), byte(channel)), mark
}

// EndFrame fills in the size of the frame begun at mark.
func EndFrame(b []byte, mark int) []byte {
	binary.BigEndian.PutUint32(b[mark:], uint32(len(b)-mark))
	return b
}

// AppendHeartbeat appends an empty frame (part 2.4.5).
func AppendHeartbeat(b []byte) []byte {
	return append(b, 0, 0, 0, 8, 2, FrameAMQP, 0, 0)
}
