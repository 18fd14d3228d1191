// Package engine is fedrouter's own AMQP 1.0 client engine for the data
// path (issue 25; docs/engine.md): connections, sessions, sender and
// receiver links over amqp/wire, built so that moving a message costs no
// goroutine hand-off.
//
// Per connection one goroutine reads and decodes frames and calls the
// receivers' callbacks itself; one goroutine writes what callers
// appended to the connection's bounded outgoing buffer, in one write per
// batch. Senders append their frames to that buffer from whichever
// goroutine calls them (a forwarder calls them from the source
// connection's reader), so a forwarded message crosses no goroutine.
package engine
