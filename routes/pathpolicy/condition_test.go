package pathpolicy

import (
	"testing"

	"github.com/fedrouter/fedrouter/links"
)

// The reject's detail names the condition the route rejects with; the
// package keeps its own copy so as not to import links.
func TestCondNoPathIsLinks(t *testing.T) {
	if condNoPath != links.CondNoPath {
		t.Fatalf("condNoPath %q, links.CondNoPath %q", condNoPath, links.CondNoPath)
	}
}
