package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A resource command refuses what its flags get wrong before it reaches
// NATS: a redelivery's time that is not one is told as such, though no
// server answers. Not parallel: it sets the environment.
func TestAResourceCommandRefusesItsFlagsBeforeConnecting(t *testing.T) {
	t.Setenv("HERALD_CONFIG", "")
	t.Setenv("NATS_URL", "nats://127.0.0.1:1") // nothing listens there
	_, err := herald(t, "webhooks", "redeliver", "--tenant", "acme", "--since", "yesterday")
	require.ErrorContains(t, err, "--since: want a time such as 2026-12-01T08:00:00Z")
}
