package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/provider"
)

func TestHTTPError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status     int
		header     http.Header
		permanent  bool
		retryAfter time.Duration
		text       string
	}{
		{400, nil, true, 0, `HTTP 400: {"message":"Invalid address"}`},
		{401, nil, true, 0, "authentication rejected: HTTP 401"},
		{403, nil, true, 0, "authentication rejected: HTTP 403"},
		{413, nil, true, 0, "HTTP 413"},
		{429, http.Header{"Retry-After": {"7"}}, false, 7 * time.Second, "HTTP 429"},
		{429, nil, false, 0, "HTTP 429"},
		{500, nil, false, 0, "HTTP 500"},
		{503, nil, false, 0, "HTTP 503"},
	}
	for _, tt := range tests {
		err := provider.HTTPError(tt.status, tt.header, `{"message":"Invalid address"}`)
		require.Equal(t, tt.permanent, provider.IsPermanent(err), tt.status)
		require.Equal(t, tt.retryAfter, provider.RetryAfter(err), tt.status)
		require.ErrorContains(t, err, tt.text)
		require.False(t, provider.IsAmbiguous(err))
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	require.Equal(t, 30*time.Second, provider.ParseRetryAfter(http.Header{"Retry-After": {"30"}}, now))
	require.Equal(t, 90*time.Second, provider.ParseRetryAfter(http.Header{"Retry-After": {"Mon, 30 Nov 2026 09:01:30 GMT"}}, now))
	require.Zero(t, provider.ParseRetryAfter(http.Header{"Retry-After": {"soon"}}, now))
	require.Zero(t, provider.ParseRetryAfter(http.Header{}, now))
}

func TestNetworkError(t *testing.T) {
	t.Parallel()
	require.True(t, provider.IsAmbiguous(provider.NetworkError(fmt.Errorf("post: %w", context.DeadlineExceeded))))
	require.True(t, provider.IsAmbiguous(provider.NetworkError(fmt.Errorf("read: %w", syscall.ECONNRESET))))
	require.False(t, provider.IsAmbiguous(provider.NetworkError(fmt.Errorf("dial: %w", syscall.ECONNREFUSED))))
	require.False(t, provider.IsPermanent(provider.NetworkError(errors.New("dial tcp: no such host"))))
}

func TestRetryAfterIsTheLongestInAPass(t *testing.T) {
	t.Parallel()
	pass := errors.Join(
		fmt.Errorf("ses: %w", &provider.TransientError{Err: errors.New("throttled"), RetryAfter: 2 * time.Second}),
		fmt.Errorf("sendgrid: %w", &provider.TransientError{Err: errors.New("429"), RetryAfter: 9 * time.Second}),
		fmt.Errorf("smtp: %w", errors.New("421 try later")),
	)
	require.Equal(t, 9*time.Second, provider.RetryAfter(pass))
	require.False(t, provider.IsAmbiguous(pass))
}
