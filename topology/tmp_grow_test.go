package topology

import "testing"

func BenchmarkTmpGrow(b *testing.B) {
	n := bigNode(b)
	p := n.Paths()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p.grow(i%1000, nil)
		i++
	}
}
func BenchmarkTmpGraph(b *testing.B) {
	n := bigNode(b)
	b.ReportAllocs()
	for b.Loop() {
		n.graph()
	}
}
func BenchmarkTmpCompute(b *testing.B) {
	n := bigNode(b)
	es := n.graph()
	b.ReportAllocs()
	for b.Loop() {
		compute(es, n.paths)
	}
}
