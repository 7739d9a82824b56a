package apns

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sideshow/apns2"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/shared/provider"
)

// ErrConfig is what a refusal of Herald's provider token wraps: the key
// id, team id or .p8 key is wrong (or the clock is far off), and every
// message will be refused until an operator fixes the configuration.
var ErrConfig = errors.New("the APNs configuration is wrong (key id, team id, .p8 key or clock)")

// goneReasons are the 400 reasons that say the token will never reach
// this app: it is malformed, or belongs to another app (or environment).
var goneReasons = map[string]bool{
	apns2.ReasonBadDeviceToken:         true,
	apns2.ReasonDeviceTokenNotForTopic: true,
}

// configReasons are the 403 reasons that say Herald's APNs configuration
// is wrong, not the message (ErrConfig).
var configReasons = map[string]bool{
	apns2.ReasonInvalidProviderToken: true,
	apns2.ReasonExpiredProviderToken: true,
	apns2.ReasonMissingProviderToken: true,
}

// classify is the one table of what APNs's answer means: nil for an
// accepted message, otherwise a classified failure keeping APNs's reason.
//
//   - 200: accepted;
//   - 410 (Unregistered, ExpiredToken): the device is gone (push.ErrGone);
//   - 400 BadDeviceToken, DeviceTokenNotForTopic: gone as well;
//   - other 400s (PayloadTooLarge, BadTopic, MissingTopic…) and 413:
//     permanent, with the reason;
//   - 403 InvalidProviderToken, ExpiredProviderToken,
//     MissingProviderToken: permanent, ErrConfig;
//   - 429 (TooManyRequests, TooManyProviderTokenUpdates) and 5xx:
//     transient;
//   - any other status: permanent.
func classify(status int, reason string, since time.Time) error {
	if reason == "" {
		reason = http.StatusText(status)
	}
	err := fmt.Errorf("HTTP %d: %s", status, reason)
	switch {
	case status == http.StatusOK:
		return nil
	case status == http.StatusGone:
		return push.Gone(goneSince(err, since))
	case status == http.StatusBadRequest && goneReasons[reason]:
		return push.Gone(err)
	case status == http.StatusForbidden && configReasons[reason]:
		return provider.Permanent(fmt.Errorf("%w: %w", ErrConfig, err))
	case status == http.StatusTooManyRequests || status >= 500:
		return &provider.TransientError{Err: err}
	}
	return provider.Permanent(err)
}

// goneSince adds when APNs says the token stopped being valid, if it said.
func goneSince(err error, since time.Time) error {
	if since.IsZero() {
		return err
	}
	return fmt.Errorf("%w (invalid since %s)", err, since.UTC().Format(time.RFC3339))
}
