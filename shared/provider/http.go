package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// HTTPError classifies a provider's HTTP answer that was not a success,
// keeping the provider's own words (body) in the error:
//
//   - 401 and 403: permanent — the credentials are rejected, and retrying
//     with them cannot help;
//   - 408 and 429: transient, with the Retry-After the provider gave;
//   - other 4xx: permanent — the provider refuses this message;
//   - 5xx and anything else: transient.
func HTTPError(status int, header http.Header, body string) error {
	body = strings.TrimSpace(body)
	if len(body) > 512 {
		body = body[:512] + "…"
	}
	err := fmt.Errorf("HTTP %d: %s", status, body)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return Permanent(fmt.Errorf("authentication rejected: %w", err))
	case status == http.StatusTooManyRequests || status == http.StatusRequestTimeout:
		return &TransientError{Err: err, RetryAfter: ParseRetryAfter(header, time.Now())}
	case status >= 400 && status < 500:
		return Permanent(err)
	}
	return &TransientError{Err: err}
}

// ParseRetryAfter reads a Retry-After header: seconds, or an HTTP date.
// It returns 0 when there is none or it cannot be read.
func ParseRetryAfter(header http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(header.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// NetworkError classifies a failure to get an answer at all. A timeout, a
// cancellation or a connection cut after the request was sent is ambiguous:
// the provider may have accepted the message. A refused connection is not:
// nothing arrived.
func NetworkError(err error) error {
	var netErr net.Error
	ambiguous := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		(errors.As(err, &netErr) && netErr.Timeout()) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
	return &TransientError{Err: err, Ambiguous: ambiguous}
}
