package routes

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Paging of route lists (GET /api/v1/routes?limit=N&after=CURSOR): a page
// is the routes that sort after the cursor, in list order (dest, src,
// exchange, id), at most limit of them; the cursor is the last route's
// position in that order, opaque to clients. A route added or deleted
// between two pages never makes another appear twice or go missing: the
// position of a route does not depend on the others.

// ErrBadCursor: a paging cursor that this router did not hand out.
var ErrBadCursor = errors.New("routes: bad paging cursor")

// MaxPageLimit bounds a page, so that one answer stays a few MiB.
const MaxPageLimit = 10000

// cursorKey is a route's position in list order.
type cursorKey [4]string

func keyOf(st Status) cursorKey {
	return cursorKey{st.Spec.Dest, st.Spec.Src, st.Spec.Exchange, st.ID}
}

// routeKey is a route's position in list order.
func routeKey(r *route) cursorKey { return cursorKey{r.spec.Dest, r.spec.Src, r.spec.Exchange, r.id} }

func compareKeys(a, b cursorKey) int {
	for i := range a {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// SortStatuses sorts a route list in list order: dest, src, exchange, id.
func SortStatuses(list []Status) {
	slices.SortFunc(list, func(a, b Status) int { return compareKeys(keyOf(a), keyOf(b)) })
}

// Page returns the routes of list (in any order) after the cursor after
// ("" for the first page), at most limit of them, sorted, and the cursor
// of the next page ("" when this one is the last).
func Page(list []Status, after string, limit int) (page []Status, next string, err error) {
	return pageOf(list, keyOf, after, limit)
}

// ListPage is a page of List, as Page makes it, with only the page's
// statuses computed: paging through 10,000 routes a thousand at a time
// does not compute every route's status ten times.
func (m *Manager) ListPage(after string, limit int) (page []Status, next string, err error) {
	m.mu.Lock()
	rs := make([]*route, 0, len(m.routes))
	for _, r := range m.routes {
		rs = append(rs, r)
	}
	m.mu.Unlock()
	in, next, err := pageOf(rs, routeKey, after, limit)
	if err != nil {
		return nil, "", err
	}
	page = make([]Status, 0, len(in))
	for _, r := range in {
		page = append(page, r.status())
	}
	return page, next, nil
}

// pageOf is Page over any list whose items have a place in list order.
// Each item's key is made once and only the items after the cursor are
// sorted: paging through 10,000 routes used to sort all of them for
// every page, making every key twice per comparison — a third of the
// router's CPU while a client polled the list (docs/performance.md).
func pageOf[T any](list []T, key func(T) cursorKey, after string, limit int) (page []T, next string, err error) {
	if limit < 1 || limit > MaxPageLimit {
		return nil, "", fmt.Errorf("routes: page limit %d: want 1..%d", limit, MaxPageLimit)
	}
	var from cursorKey
	if after != "" {
		if from, err = decodeCursor(after); err != nil {
			return nil, "", err
		}
	}
	rest := sortedAfter(list, key, from, after != "")
	n := min(len(rest), limit)
	page = make([]T, n)
	for i := range n {
		page[i] = rest[i].it
	}
	if n < len(rest) {
		next = encodeCursor(rest[n-1].k)
	}
	return page, next, nil
}

// keyed is an item with its place in list order.
type keyed[T any] struct {
	k  cursorKey
	it T
}

// sortedAfter returns list's items in list order with their keys, each
// key made once; with only set, only those after from.
func sortedAfter[T any](list []T, key func(T) cursorKey, from cursorKey, only bool) []keyed[T] {
	out := make([]keyed[T], 0, len(list))
	for _, it := range list {
		if k := key(it); !only || compareKeys(k, from) > 0 {
			out = append(out, keyed[T]{k, it})
		}
	}
	slices.SortFunc(out, func(a, b keyed[T]) int { return compareKeys(a.k, b.k) })
	return out
}

func encodeCursor(k cursorKey) string {
	b, _ := json.Marshal(k) // four strings always encode
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursorKey, error) {
	var k cursorKey
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &k)
	}
	if err != nil {
		return k, fmt.Errorf("%w %q: pass the next cursor of the previous page as it came", ErrBadCursor, s)
	}
	return k, nil
}
