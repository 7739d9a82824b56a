package delivery_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/notification"
)

// A notification a workflow run's send made, whose status a later wait of
// the run waits for (until_status), tells the run when it is delivered,
// once, on runs.in.<tenant>; a plain notification tells nothing.
func TestADeliveredNotificationOfARunTellsItsRun(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	ofRun := purchaseOrder(1, "Ольга", "ru")
	ofRun.Run = &notification.RunRef{Key: "acme.UE8tMQ.run_1", Step: 2}
	body, err := json.Marshal(ofRun)
	require.NoError(t, err)
	b.publishRaw(t, ofRun.DedupeKey, body)
	b.publish(t, 2)
	require.Eventually(t, func() bool { return b.sent() == 2 }, 60*time.Second, 20*time.Millisecond)
	b.waitSettled(t)

	told := b.streamMessages(t, "RUNS")
	require.Len(t, told, 1, "the run's notification only")
	require.Equal(t, "runs.in.acme", told[0].Subject)
	require.Equal(t, "runstatus:"+ofRun.ID+":delivered", told[0].Header.Get(jetstream.MsgIDHeader))
	var m struct {
		Kind   string                 `json:"kind"`
		Status notification.RunStatus `json:"status"`
	}
	require.NoError(t, json.Unmarshal(told[0].Data, &m))
	require.Equal(t, "status", m.Kind)
	require.Equal(t, notification.RunStatus{Key: "acme.UE8tMQ.run_1", Step: 2, NotificationID: ofRun.ID, State: "delivered",
		Time: m.Status.Time}, m.Status)
	require.False(t, m.Status.Time.IsZero())

	// A copy the duplicate window missed finds it delivered: not sent, and
	// the run told no second time.
	b.publishAs(t, 1, "copy-of-1")
	b.publishRaw(t, "copy-of-run-1", body)
	b.waitSettled(t)
	require.Equal(t, 2, b.sent())
	require.Len(t, b.streamMessages(t, "RUNS"), 1)
}
