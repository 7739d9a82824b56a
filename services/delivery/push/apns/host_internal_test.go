package apns

import (
	"testing"

	"github.com/sideshow/apns2"
	"github.com/stretchr/testify/require"
)

func TestProductionPicksTheEndpointAndHostReplacesIt(t *testing.T) {
	t.Parallel()
	require.Equal(t, apns2.HostDevelopment, host(Config{}))
	require.Equal(t, apns2.HostProduction, host(Config{Production: true}))
	require.Equal(t, "https://apns.test:8443", host(Config{Production: true, Host: "https://apns.test:8443/"}))
}
