package webpush

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/shared/provider"
)

// classify is the one table of what a push service's answer means
// (RFC 8030 §5, RFC 8292 §4.2): nil for an accepted message, otherwise a
// classified failure keeping the service's words.
//
//   - 2xx (201 Created, 202 Accepted): accepted;
//   - 404 and 410: the subscription is gone (push.ErrGone, permanent);
//   - 413: the payload is too large (permanent);
//   - 429 and 5xx: transient, with the Retry-After the service gave;
//   - 401 and 403: the VAPID credentials are refused (permanent);
//   - 3xx (no redirect is followed) and other 4xx: permanent.
func classify(status int, header http.Header, words string) error {
	if words == "" {
		words = http.StatusText(status)
	}
	err := fmt.Errorf("HTTP %d: %s", status, words)
	switch {
	case status >= 200 && status < 300:
		return nil
	case status == http.StatusNotFound || status == http.StatusGone:
		return push.Gone(err)
	case status == http.StatusRequestEntityTooLarge:
		return provider.Permanent(fmt.Errorf("payload too large: %w", err))
	case status == http.StatusTooManyRequests || status >= 500:
		return &provider.TransientError{Err: err, RetryAfter: provider.ParseRetryAfter(header, time.Now())}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return provider.Permanent(fmt.Errorf("VAPID credentials refused: %w", err))
	}
	return provider.Permanent(err)
}

// topicPattern is what RFC 8030 §5.4 allows in a Topic header.
var topicPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// topic is a collapse id as a Topic header: as it is when it fits, or
// else a digest of it that does (push services refuse any other Topic).
func topic(collapseID string) string {
	if collapseID == "" || topicPattern.MatchString(collapseID) {
		return collapseID
	}
	sum := sha256.Sum256([]byte(collapseID))
	return base64.RawURLEncoding.EncodeToString(sum[:24])
}
