package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// What no route serves is answered as every other error is, with a
// problem: 404 for a path the API lacks, 405 (and Allow) for a method a
// path lacks. (The OpenAPI document describes neither: the plain client.)
func TestWhatNoRouteServesIsAProblem(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	for _, c := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodGet, "/v1/nothing-here", http.StatusNotFound, ""},
		{http.MethodGet, "/v1/", http.StatusNotFound, ""},
		{http.MethodDelete, "/v1/events", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPut, "/v1/notifications", http.StatusMethodNotAllowed, "GET, POST"},
	} {
		req, err := http.NewRequestWithContext(heraldtest.Context(t), c.method, b.url+c.path, strings.NewReader("{}"))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+acmeSend)
		resp, err := heraldtest.HTTPClient(t).Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, c.status, resp.StatusCode, "%s %s: %s", c.method, c.path, body)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
		require.Equal(t, c.allow, resp.Header.Get("Allow"))
		var problem struct {
			Status int    `json:"status"`
			Detail string `json:"detail"`
		}
		require.NoError(t, json.Unmarshal(body, &problem))
		require.Equal(t, c.status, problem.Status)
		require.Contains(t, problem.Detail, c.path)
	}
}
