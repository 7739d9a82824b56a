package streams

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	declared := jetstream.ConsumerConfig{Durable: "router", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxDeliver: 20}
	tests := []struct {
		name   string
		actual map[string]any
		want   []string
	}{
		{
			name: "server defaults and the name it derives are not differences",
			actual: map[string]any{"durable_name": "router", "name": "router", "ack_policy": "explicit", "ack_wait": 30e9,
				"max_deliver": 20, "deliver_policy": "all", "replay_policy": "instant", "num_replicas": 0, "metadata": map[string]any{"_nats.ver": "2.15.2"}},
			want: nil,
		},
		{
			// `nats consumer add --config` sends an unset pause_until as Go's zero time.
			name: "zero time from the nats CLI is unset",
			actual: map[string]any{"durable_name": "router", "ack_policy": "explicit", "ack_wait": 30e9, "max_deliver": 20,
				"pause_until": "0001-01-01T00:00:00Z", "deliver_policy": "all", "replay_policy": "instant"},
			want: nil,
		},
		{
			name: "changed and added settings are differences, durations read as durations",
			actual: map[string]any{"durable_name": "router", "ack_policy": "explicit", "ack_wait": 60e9, "max_deliver": 20,
				"headers_only": true, "deliver_policy": "all", "replay_policy": "instant"},
			want: []string{"ack_wait: 1m0s → 30s", "headers_only: true → (unset)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := diff(declared, tt.actual)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
