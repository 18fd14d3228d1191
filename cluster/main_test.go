package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test starts (a member's Run, its handoffs, pgx's pool
// of the store it talks to) must be gone when the tests end: a member
// that stops must leave nothing running behind it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
