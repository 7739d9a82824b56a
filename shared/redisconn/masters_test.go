package redisconn_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/redisconn"
)

// A failover is told once: one log line, one count, and the masters gauge
// names the new master.
func TestAFailoverIsToldOnce(t *testing.T) {
	t.Parallel()
	for name, start := range map[string]func(t *testing.T) (string, func() string){
		"sentinel": func(t *testing.T) (string, func() string) {
			s := heraldtest.StartSentinelSet(t)
			return s.URL(), s.KillMaster
		},
		"cluster": func(t *testing.T) (string, func() string) {
			c := heraldtest.StartClusterSet(t)
			return c.URL(), c.KillMaster
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url, kill := start(t)
			client, kind, err := redisconn.Open(url, redisconn.TLS{})
			require.NoError(t, err)
			defer client.Close()
			var log heraldtest.Buffer
			reader := sdkmetric.NewManualReader()
			m, err := redisconn.FollowMasters(url, client, kind, slog.New(slog.NewTextHandler(&log, nil)),
				sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), 100*time.Millisecond)
			require.NoError(t, err)
			defer m.Close()
			before := m.Now()
			require.NotEmpty(t, before)

			old := kill()
			require.Contains(t, before, old)
			require.Eventually(t, func() bool {
				now := m.Now()
				return len(now) == len(before) && !slicesContain(now, old)
			}, 60*time.Second, 100*time.Millisecond, "the new master is known")
			time.Sleep(500 * time.Millisecond) // more polls: still told once
			require.Equal(t, 1, strings.Count(log.String(), "redis failover"), log.String())
			require.EqualValues(t, 1, heraldtest.Total(heraldtest.Counts(t, reader, "herald.redis.master_changes", "")))
		})
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
