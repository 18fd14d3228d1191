// Package wire is the AMQP 1.0 wire format for fedrouter's own engine:
// the type system (OASIS AMQP 1.0 part 1), frames (part 2.3), the
// performatives (part 2.7), SASL (part 5.3) and the message sections
// (part 3.2). It does no I/O and starts no goroutines.
//
// Encoding appends to a caller's buffer (Append*), so a frame is built in
// place in a connection's outgoing buffer. Decoding reads from a byte
// slice with a sticky error (Decoder); byte strings it returns (delivery
// tags, payloads) alias the input and are valid only as long as it is.
// Nothing from the network is trusted: every size is checked against
// what is left of the input before anything is allocated, and nesting is
// bounded (MaxDepth).
package wire
