package router

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test starts (routers, control links, admin servers,
// connections, go-amqp's readers and writers) must be gone when the tests
// end. No third-party goroutine is ignored: go-amqp's end with their
// connection, net/http's with the test's idle connections (closed by each
// test), and the Prometheus registries start none.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
