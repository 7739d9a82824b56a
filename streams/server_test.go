package streams_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/streams"
)

// A server without message schedules is refused, naming the version
// needed and the one found; versions compare number by number.
func TestCheckServerVersion(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"2.14.0", "2.14.1", "2.15.2", "v2.15.0", "2.20.0", "3.0.0", "2.14.0+build.7", "2.15.0-RC.1"} {
		require.NoError(t, streams.CheckServerVersion(ok), ok)
	}
	for _, old := range []string{"2.9.25", "2.13.9", "2.12.4", "2.10.22", "1.99.99", "2.14.0-RC.1", "2.14.0-beta"} {
		require.EqualError(t, streams.CheckServerVersion(old),
			"nats-server "+old+" is too old: Herald needs nats-server 2.14.0 or newer (message schedules, for workflows' waits); upgrade the server", old)
	}
	for _, bad := range []string{"", "2.14", "2.14.x", "two", "2.14.0-", "2.-1.0", "2.014.0"} {
		require.ErrorContains(t, streams.CheckServerVersion(bad), "is not a version Herald can read: Herald needs nats-server 2.14.0 or newer", bad)
	}
}

// The embedded server Herald's tests and `herald dev` run passes.
func TestTheEmbeddedServerHasMessageSchedules(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATS(t)
	require.NoError(t, streams.CheckServerVersion(n.Conn.ConnectedServerVersion()), n.Conn.ConnectedServerVersion())
}
