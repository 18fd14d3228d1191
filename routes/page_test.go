package routes

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func pageStatuses(n int) []Status {
	var out []Status
	for i := n - 1; i >= 0; i-- { // out of order: Page sorts
		s := Spec{Kind: KindQueue, Dest: fmt.Sprintf("d%d", i%3), Src: "s", Exchange: "x", Queue: fmt.Sprintf("q%d", i)}
		out = append(out, Status{ID: s.ID(), Spec: s})
	}
	return out
}

// Pages follow one another in list order, each route once; a route
// deleted after its page was read does not move the others.
func TestPageWalksInListOrder(t *testing.T) {
	all := pageStatuses(10)
	pages := 0
	got := walkPages(t, func(after string, got []string) ([]Status, string, error) {
		list := pageStatuses(10)
		if pages++; pages == 3 { // the last route of the previous page is gone
			list = removeID(list, got[len(got)-1])
		}
		return Page(list, after, 3)
	})
	SortStatuses(all)
	if want := idsOf(all); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("pages gave\n%v\nwant\n%v", got, want)
	}
}

// walkPages follows the pages page gives (it sees the ids listed so far)
// to the last and returns the ids listed, in order.
func walkPages(t *testing.T, page func(after string, got []string) ([]Status, string, error)) []string {
	t.Helper()
	var got []string
	after := ""
	for {
		p, next, err := page(after, got)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, idsOf(p)...)
		if next == "" {
			return got
		}
		after = next
	}
}

func idsOf(list []Status) []string {
	var out []string
	for _, st := range list {
		out = append(out, st.ID)
	}
	return out
}

func removeID(list []Status, id string) []Status {
	var out []Status
	for _, st := range list {
		if st.ID != id {
			out = append(out, st)
		}
	}
	return out
}

func TestPageRefusesBadInput(t *testing.T) {
	for _, limit := range []int{0, -1, MaxPageLimit + 1} {
		if _, _, err := Page(nil, "", limit); err == nil || !strings.Contains(err.Error(), "want 1..") {
			t.Errorf("limit %d: %v", limit, err)
		}
	}
	for _, after := range []string{"nonsense!", "bm9uc2Vuc2U"} { // not base64; base64 of "nonsense"
		if _, _, err := Page(pageStatuses(2), after, 1); !errors.Is(err, ErrBadCursor) {
			t.Errorf("after %q: %v, want ErrBadCursor", after, err)
		}
	}
	if p, next, err := Page(pageStatuses(2), "", 2); err != nil || len(p) != 2 || next != "" {
		t.Errorf("exact last page: %d routes, next %q, %v", len(p), next, err)
	}
}

// The manager's pages are Page's over its list, computed per page.
func TestManagerListPage(t *testing.T) {
	m := newTestManager(t, "")
	for i := 0; i < 7; i++ {
		if _, err := m.Add(t.Context(), testSpec(i)); err != nil {
			t.Fatal(err)
		}
	}
	got := walkPages(t, func(after string, _ []string) ([]Status, string, error) { return m.ListPage(after, 3) })
	if want := idsOf(m.List()); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("pages %v, List %v", got, want)
	}
	if _, _, err := m.ListPage("bad!", 3); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("bad cursor: %v", err)
	}
}

// The whole list, and the list page by page, at 10,000 routes: what a
// route list or a /metrics scrape costs the router.
func BenchmarkList10000(b *testing.B) {
	m := newTestManager(b, "")
	for i := range 10000 {
		s := testSpec(i)
		s.Durable = false
		if _, err := m.Add(b.Context(), s); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("List", func(b *testing.B) {
		for b.Loop() {
			m.List()
		}
	})
	b.Run("Pages1000", func(b *testing.B) {
		for b.Loop() {
			for after := ""; ; {
				_, next, err := m.ListPage(after, 1000)
				if err != nil {
					b.Fatal(err)
				}
				if after = next; after == "" {
					break
				}
			}
		}
	})
}
