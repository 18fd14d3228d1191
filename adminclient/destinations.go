package adminclient

import (
	"context"
	"net/http"

	"github.com/fedrouter/fedrouter/api"
)

// Destinations returns the router's global destinations (GET
// /v1/destinations); a router without a destinations: section answers 404.
func (c *Client) Destinations(ctx context.Context) (api.Destinations, error) {
	var st api.Destinations
	err := c.do(ctx, http.MethodGet, "/api/v1/destinations", nil, &st)
	return st, err
}
