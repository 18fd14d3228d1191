package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/fedrouter/fedrouter/routes"
)

// isTransit says whether variant v crosses two routers.
func isTransit(v string) bool { return v == vTransitEngine }

// The transit routers' IDs: A takes from the source, B delivers.
const routerA, routerB = "fedbench-a", "fedbench-b"

// pathUnreported is a transit forwarder's data path when the router's
// link list does not say (a fedrouter from before transit on the engine);
// pathNotEngine a route's whose detail does not say the engine.
const (
	pathUnreported = "unreported"
	pathNotEngine  = "not engine"
)

// transitHop is one forwarder on a transit run's way and the data path it
// ran on.
type transitHop struct {
	Router string `json:"router"` // fedbench-a, fedbench-b
	What   string `json:"what"`   // "route ID", or "transit BROKER>DEST"
	Path   string `json:"data_path"`
}

func (h transitHop) String() string { return h.Router + " " + h.What + ": " + h.Path }

// checkHops says whether every hop of a transit run ran on the engine,
// naming those that did not. The engine is the only data path: a hop on
// anything else (or one that does not say, a router from before transit
// on the engine) is a router defect whose figures are not the engine's,
// so the run fails, not retried (a second run would find the same).
func checkHops(hops []transitHop) error {
	var off []string
	for _, h := range hops {
		if h.Path != routes.DataPathEngine {
			off = append(off, h.String())
		}
	}
	if len(off) == 0 {
		return nil
	}
	return notRetried(fmt.Errorf("not on the engine data path: %s", strings.Join(off, "; ")))
}

// routeHops are the hops of a router's routes: engine when route list's
// detail says so, else pathNotEngine with the detail.
func routeHops(router string, sts []routes.Status) []transitHop {
	var out []transitHop
	for _, st := range sts {
		path := fmt.Sprintf("%s (detail %q)", pathNotEngine, st.Detail)
		if strings.Contains(st.Detail, engineDetail) {
			path = routes.DataPathEngine
		}
		out = append(out, transitHop{Router: router, What: "route " + st.ID, Path: path})
	}
	return out
}

// linkList is what the transit hops need of GET /api/v1/links, decoded
// here rather than through adminclient so that a router whose link list
// lacks data_path reads as unreported.
type linkList []struct {
	Transit []struct {
		Broker    string `json:"broker"`
		Dest      string `json:"dest"`
		DataPath  string `json:"data_path"`
		Forwarded uint64 `json:"forwarded"`
	} `json:"transit"`
}

// transitHops are the hops of a router's transit forwarders that carried
// messages to dest.
func transitHops(router, dest string, ll linkList) []transitHop {
	var out []transitHop
	for _, l := range ll {
		for _, t := range l.Transit {
			if t.Dest != dest || t.Forwarded == 0 {
				continue
			}
			path := t.DataPath
			if path == "" {
				path = pathUnreported
			}
			out = append(out, transitHop{Router: router, What: "transit " + t.Broker + ">" + t.Dest, Path: path})
		}
	}
	return out
}

// maxLinkList bounds the link list read: a router's answer is not trusted.
const maxLinkList = 8 << 20

// links reads the router's link list as linkList.
func (r *routerProc) links(ctx context.Context) (linkList, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.api.BaseURL()+"/api/v1/links", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("link list: %w", err)
	}
	defer func() { _ = resp.Body.Close() }() // read in full below
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLinkList+1))
	if err != nil {
		return nil, fmt.Errorf("link list: %w", err)
	}
	if resp.StatusCode != http.StatusOK || len(body) > maxLinkList {
		return nil, fmt.Errorf("link list: status %d, %d bytes (at most %d)", resp.StatusCode, len(body), maxLinkList)
	}
	var ll linkList
	if err := json.Unmarshal(body, &ll); err != nil {
		return nil, fmt.Errorf("link list: %w", err)
	}
	return ll, nil
}

// wayHops are the hops of a transit run: A's routes (stsA), then the
// transit forwarders of A (llA) and B (llB) that carried messages to
// dest. Each router must have one: a run that did not cross both is not
// the transit case.
func wayHops(stsA []routes.Status, llA, llB linkList, dest string) ([]transitHop, error) {
	hops := routeHops(routerA, stsA)
	for _, r := range []struct {
		name string
		ll   linkList
	}{{routerA, llA}, {routerB, llB}} {
		th := transitHops(r.name, dest, r.ll)
		if len(th) == 0 {
			return nil, fmt.Errorf("no transit forwarder of %s carried messages to %s", r.name, dest)
		}
		hops = append(hops, th...)
	}
	return hops, nil
}
