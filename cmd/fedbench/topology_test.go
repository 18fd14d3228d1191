package main

import (
	"reflect"
	"testing"
)

func TestTopoResultParsesBenchmarkLines(t *testing.T) {
	r := &topoResult{Benchmark: benchUpdate}
	for _, line := range []string{
		"BenchmarkAdvertisementToNextHop1000-2   	     300	   7058040 ns/op	  898455 B/op	   20048 allocs/op",
		"BenchmarkAdvertisementToNextHop1000-2   	     300	   5000000 ns/op	  900000 B/op	   20050 allocs/op",
		"BenchmarkAdvertisementToNextHop1000   	     300	   6000000 ns/op	  910000 B/op	   20052 allocs/op",
		"BenchmarkRecompute1000-2   	      20	 279415193 ns/op	29403547 B/op	    6059 allocs/op",
		"BenchmarkAdvertisementToNextHop10000-2 1 1 ns/op",
		"PASS",
	} {
		r.parse(line)
	}
	if want := []float64{7058040, 5000000, 6000000}; !reflect.DeepEqual(r.Runs, want) {
		t.Fatalf("runs %v, want %v", r.Runs, want)
	}
	if got := medianOf(r.bytes); got != 900000 {
		t.Fatalf("median B/op %v", got)
	}
	if got := medianOf(r.allocs); got != 20050 {
		t.Fatalf("median allocs/op %v", got)
	}
}
