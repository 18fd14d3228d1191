package adminclient

import (
	"context"
	"net/http"

	"github.com/fedrouter/fedrouter/api"
)

// Reload asks the router to read its configuration file again and apply
// it; the answer says what changed. A refusal is an *Error whose Code is
// api.CodeInvalidConfig, CodeReloadRefused or CodeReloadBusy and whose
// Problems name each problem as file:line; nothing changed then.
func (c *Client) Reload(ctx context.Context) (api.Reload, error) {
	var res api.Reload
	err := c.do(ctx, http.MethodPost, "/api/v1/reload", nil, &res)
	return res, err
}
