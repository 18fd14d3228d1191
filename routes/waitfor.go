package routes

import (
	"errors"
	"fmt"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

// missingRetry bounds how long a route waiting for a queue or exchange
// that does not exist waits before it looks again: it starts by itself
// within this once the object appears.
const missingRetry = 5 * time.Second

// missingError: a queue or exchange the route needs does not exist (yet)
// at its broker. The route waits for it (Waiting, with "waiting for
// queue X at broker Y") rather than failing: an operator who creates it
// sees the route start by itself.
type missingError struct {
	node   amqp.Node
	broker string
	err    error // what the broker or its management said
}

func (e *missingError) Error() string {
	return fmt.Sprintf("%s %s does not exist at broker %s", e.node.Kind, e.node.Name, e.broker)
}

func (e *missingError) Unwrap() error { return e.err }

// waiting is what route list shows while the route waits for the object.
func (e *missingError) waiting() string {
	return fmt.Sprintf("waiting for %s %s at broker %s", e.node.Kind, e.node.Name, e.broker)
}

// missing makes err a *missingError when it says node does not exist at
// broker: a management lookup's ErrNotFound, or an attach the broker
// refused with amqp:not-found. Any other err is returned as it is.
func missing(err error, node amqp.Node, broker string) error {
	if err == nil || !(errors.Is(err, amqp.ErrNotFound) || amqp.Condition(err) == "amqp:not-found") {
		return err
	}
	node.Key = ""
	return &missingError{node: node, broker: broker, err: err}
}
