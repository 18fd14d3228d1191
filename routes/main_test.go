package routes

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test starts — routes, their runs, transit forwarders,
// go-amqp's connection goroutines — must be gone when the tests end: a
// route that is stopped and does not end its goroutines is a leak.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
