package adminclient

import (
	"context"
	"net/http"

	"github.com/fedrouter/fedrouter/api"
)

// Cluster returns the router's cluster view (GET /v1/cluster); a single
// router answers 404 (not a cluster member).
func (c *Client) Cluster(ctx context.Context) (api.ClusterStatus, error) {
	var st api.ClusterStatus
	err := c.do(ctx, http.MethodGet, "/api/v1/cluster", nil, &st)
	return st, err
}
