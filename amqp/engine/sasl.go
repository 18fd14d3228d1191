package engine

import (
	"fmt"
	"slices"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// sasl negotiates the configured mechanism (part 5.3). The password is
// written to the socket only, never into an error.
func (c *Conn) sasl() error {
	if _, err := c.nc.Write(wire.ProtoSASL[:]); err != nil {
		return err
	}
	if err := c.expectProto(wire.ProtoSASL); err != nil {
		return err
	}
	var mechs wire.SASLMechanisms
	if err := c.saslFrame(wire.DescSASLMechanisms, func(d *wire.Decoder) { d.SASLMechanisms(&mechs) }); err != nil {
		return err
	}
	if !slices.Contains(mechs.Mechanisms, c.opts.SASL) {
		return fmt.Errorf("%w: the peer offers SASL %v, not %s", ErrAuth, mechs.Mechanisms, c.opts.SASL)
	}
	init := wire.SASLInit{Mechanism: c.opts.SASL, Hostname: c.opts.Hostname}
	switch c.opts.SASL {
	case SASLPlain:
		init.InitialResponse = []byte("\x00" + c.opts.User + "\x00" + c.opts.Password)
	case SASLAnonymous:
		init.InitialResponse = []byte("fedrouter")
	case SASLExternal:
		init.InitialResponse = []byte{}
	}
	b, mark := wire.BeginFrame(nil, wire.FrameSASL, 0)
	b = wire.EndFrame(wire.AppendSASLInit(b, &init), mark)
	clear(init.InitialResponse)
	_, err := c.nc.Write(b)
	clear(b)
	if err != nil {
		return err
	}
	var out wire.SASLOutcome
	if err := c.saslFrame(wire.DescSASLOutcome, func(d *wire.Decoder) { d.SASLOutcome(&out) }); err != nil {
		return err
	}
	if out.Code != wire.SASLOk {
		return fmt.Errorf("%w: SASL %s refused with code %d (%s)", ErrAuth, c.opts.SASL, out.Code, saslCode(out.Code))
	}
	return nil
}

func saslCode(c uint8) string {
	switch c {
	case wire.SASLAuth:
		return "authentication failed"
	case wire.SASLSys:
		return "system error"
	case wire.SASLSysPerm:
		return "permanent system error"
	case wire.SASLSysTemp:
		return "temporary system error"
	}
	return "unknown code"
}

// saslFrame reads one SASL frame and decodes it as want.
func (c *Conn) saslFrame(want uint64, decode func(*wire.Decoder)) error {
	h, body, err := c.fr.Next()
	if err != nil {
		return err
	}
	if h.Type != wire.FrameSASL {
		return violate(condFramingError, "AMQP frame during SASL")
	}
	d := wire.NewDecoder(body)
	if desc := d.Descriptor(); desc != want {
		if desc == wire.DescSASLChallenge {
			return fmt.Errorf("%w: SASL %s: the peer sent a challenge, which this mechanism does not answer", ErrAuth, c.opts.SASL)
		}
		return violate(condFramingError, "SASL frame 0x%x, expected 0x%x", desc, want)
	}
	decode(&d)
	return d.Err()
}
