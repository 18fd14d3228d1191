package adminclient

import (
	"context"
	"net/http"

	"github.com/fedrouter/fedrouter/router"
)

// Destinations returns the router's global destinations (GET
// /v1/destinations); a router without a destinations: section answers 404.
func (c *Client) Destinations(ctx context.Context) (router.Destinations, error) {
	var st router.Destinations
	err := c.do(ctx, http.MethodGet, "/api/v1/destinations", nil, &st)
	return st, err
}
