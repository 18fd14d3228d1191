package router

import (
	"errors"
	"testing"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/config"
)

// A router that floods no link state has nothing to advertise a link in:
// link add and del are refused as such, and change nothing.
func TestLinkNeedsFlooding(t *testing.T) {
	r := New(&config.Config{RouterID: "r"}, zerolog.Nop())
	for _, change := range []func() error{
		func() error { return r.AddLink(t.Context(), api.Link{Dest: "b", Src: "a"}) },
		func() error { return r.DeleteLink(t.Context(), api.Link{Dest: "b", Src: "a"}) },
	} {
		if err := change(); !errors.Is(err, ErrTopologyOff) {
			t.Fatalf("without flooding: %v, want ErrTopologyOff", err)
		}
	}
	if len(r.links.snapshot()) != 0 {
		t.Fatalf("links changed: %v", r.links.snapshot())
	}
}
