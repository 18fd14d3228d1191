// Package amqp is fedrouter's AMQP 1.0 layer: a broker's connections —
// one over github.com/Azure/go-amqp for the control plane, one on
// fedrouter's own engine (amqp/engine, Conn.Engine) on which routes
// forward — and how each kind of broker names things.
//
// It hides the go-amqp details the rest of the router should not know:
//
//   - Conn: a resilient connection to one broker (failover URLs, SASL, TLS,
//     capped exponential backoff, observable state, no retry after an
//     authentication failure).
//   - Receiver: a receiver whose link credit is managed explicitly, because
//     go-amqp's automatic credit stalls when RabbitMQ over-delivers.
//   - Profile: how one kind of broker spells the logical endpoints a route
//     needs (queue, exchange with or without binding key, control address),
//     including broker-side objects made through a management API.
//   - Classify: which scope (link, session, connection, auth) an error kills.
package amqp
