package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/fedrouter/fedrouter/amqp"
)

// printWriteStats says how well the router's connections coalesced their
// frames since before (amqp.WriteStats).
func printWriteStats(before amqp.WriteStats, messages int) {
	now := amqp.ReadWriteStats()
	w, c := now.Writes-before.Writes, now.SystemCalls-before.SystemCalls
	fmt.Printf("frames written %d (%.2f per message), write system calls %d (%.2f frames each)\n",
		w, float64(w)/float64(max(1, messages)), c, float64(w)/float64(max(1, c)))
}

// allocProfile writes the allocations made while forwarding: every
// allocation is sampled from its start (so the set-up's show little),
// and the profile is written at stop. The zero value does nothing.
type allocProfile struct{ path string }

func startAllocProfile(path string) allocProfile {
	if path != "" {
		runtime.MemProfileRate = 4096 // finer than the default 512 KiB: a 256-byte message's allocations show
	}
	return allocProfile{path}
}

func (a allocProfile) stop() {
	if a.path == "" {
		return
	}
	runtime.GC() // the profile is as of the last GC
	f, err := os.Create(a.path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fedbench: allocation profile %s: %v\n", a.path, err)
	}
}
