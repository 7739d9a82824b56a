package health_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/health"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

func TestReadyHandler(t *testing.T) {
	t.Parallel()
	var checks health.Checks
	checks.Add("nats", func(context.Context) error { return nil })

	rec := httptest.NewRecorder()
	checks.ReadyHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.JSONEq(t, `{"status":"ready","checks":{"nats":"ok"}}`, rec.Body.String())

	checks.Add("redis", func(context.Context) error { return errors.New("dial tcp 127.0.0.1:6379: connection refused") })
	rec = httptest.NewRecorder()
	checks.ReadyHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.JSONEq(t, `{"status":"not ready","checks":{"nats":"ok","redis":"dial tcp 127.0.0.1:6379: connection refused"}}`, rec.Body.String())

	// A note says more of a passing check, and nothing of a failing one.
	checks.Note("redis", func() string { return "sentinel, masters 10.0.0.7:6379" })
	checks.Note("nats", func() string { return "cluster of 3" })
	rec = httptest.NewRecorder()
	checks.ReadyHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	require.JSONEq(t, `{"status":"not ready","checks":{"nats":"ok: cluster of 3","redis":"dial tcp 127.0.0.1:6379: connection refused"}}`, rec.Body.String())
}
