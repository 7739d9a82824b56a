package apns

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/shared/provider"
)

type class int

const (
	accepted class = iota
	gone
	permanent
	configError
	transient
)

func TestClassifyTable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		reason string
		want   class
	}{
		{http.StatusOK, "", accepted},
		{http.StatusGone, "Unregistered", gone},
		{http.StatusGone, "ExpiredToken", gone},
		{http.StatusBadRequest, "BadDeviceToken", gone},
		{http.StatusBadRequest, "DeviceTokenNotForTopic", gone},
		{http.StatusBadRequest, "BadTopic", permanent},
		{http.StatusBadRequest, "MissingTopic", permanent},
		{http.StatusBadRequest, "TopicDisallowed", permanent},
		{http.StatusBadRequest, "BadCollapseId", permanent},
		{http.StatusBadRequest, "PayloadEmpty", permanent},
		{http.StatusRequestEntityTooLarge, "PayloadTooLarge", permanent},
		{http.StatusForbidden, "InvalidProviderToken", configError},
		{http.StatusForbidden, "ExpiredProviderToken", configError},
		{http.StatusForbidden, "MissingProviderToken", configError},
		{http.StatusForbidden, "BadCertificate", permanent},
		{http.StatusNotFound, "BadPath", permanent},
		{http.StatusMethodNotAllowed, "MethodNotAllowed", permanent},
		{http.StatusTooManyRequests, "TooManyRequests", transient},
		{http.StatusTooManyRequests, "TooManyProviderTokenUpdates", transient},
		{http.StatusInternalServerError, "InternalServerError", transient},
		{http.StatusServiceUnavailable, "ServiceUnavailable", transient},
		{http.StatusServiceUnavailable, "Shutdown", transient},
		{http.StatusBadGateway, "", transient},
		{http.StatusMovedPermanently, "", permanent},
	}
	for _, tc := range cases {
		err := classify(tc.status, tc.reason, time.Time{})
		name := http.StatusText(tc.status) + " " + tc.reason
		require.Equal(t, tc.want, classOf(err), "%s: %v", name, err)
		if err != nil && tc.reason != "" {
			require.ErrorContains(t, err, tc.reason, name)
		}
	}
}

func classOf(err error) class {
	switch {
	case err == nil:
		return accepted
	case push.IsGone(err) && provider.IsPermanent(err):
		return gone
	case errors.Is(err, ErrConfig) && provider.IsPermanent(err):
		return configError
	case provider.IsPermanent(err):
		return permanent
	case !provider.IsAmbiguous(err):
		return transient
	}
	return -1
}
