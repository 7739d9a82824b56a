package dlq_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/services/dlq/alert"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/quota"
)

// slackReceiver is a Slack-compatible incoming webhook: it reads
// {"text": …} and answers 200 "ok", or 503 to the first tries it is told
// to refuse.
type slackReceiver struct {
	srv *httptest.Server

	mu     sync.Mutex
	refuse int
	tries  int
	texts  []string
}

func newSlackReceiver(t *testing.T, refuse int) *slackReceiver {
	t.Helper()
	r := &slackReceiver{refuse: refuse}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var msg struct {
			Text string `json:"text"`
		}
		if err != nil || req.Method != http.MethodPost || json.Unmarshal(body, &msg) != nil || msg.Text == "" {
			http.Error(w, "invalid_payload", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.tries++
		if r.tries <= r.refuse {
			http.Error(w, "service_unavailable", http.StatusServiceUnavailable)
			return
		}
		r.texts = append(r.texts, msg.Text)
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *slackReceiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.texts...)
}

func (r *slackReceiver) triesSeen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tries
}

// crossing is the event the delivery worker tells when a notification
// takes tenant's month on channel to threshold of quota.
func crossing(tenant string, channel event.Channel, quotaPerMonth int64, threshold int) quota.Event {
	return quota.Event{Type: quota.Threshold(threshold).Type(), Tenant: tenant, Channel: channel, Month: "2026-12",
		Used: quotaPerMonth * int64(threshold) / 100, Quota: quotaPerMonth, Threshold: threshold,
		Time: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)}
}

// statusSettled waits until the service has taken and settled everything
// published on notify.status.* so far: the consumer has been handed the
// last of it and holds nothing unacknowledged. Its pending count alone
// is not enough — the server counts a stored message for its consumers
// after the publisher has its acknowledgement, so on a loaded machine the
// count could read 0 before the last events were counted.
func (b *bundle) statusSettled(t *testing.T) {
	t.Helper()
	ctx := heraldtest.Context(t)
	stream, err := b.nats.JS.Stream(ctx, dlq.StatusStream)
	require.NoError(t, err)
	last, err := stream.GetLastMsgForSubject(ctx, "notify.status.*")
	require.NoError(t, err)
	cons, err := b.nats.JS.Consumer(ctx, dlq.StatusStream, dlq.AlertsDurable)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.Delivered.Stream >= last.Sequence && info.NumPending == 0 && info.NumAckPending == 0
	}, 20*time.Second, 10*time.Millisecond)
}

// Operators hear of the 80 % and 100 % thresholds through the DLQ's alert
// senders, aggregated as dead letters are: the first after a quiet spell at
// once, then whatever comes within the window in one post naming every
// tenant — never a post per event, and a threshold told again is not
// alerted again. A sender's failure is retried as a DLQ alert's is.
func TestQuotaThresholdsReachTheAlertSendersAggregated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	slack := newSlackReceiver(t, 1)
	svc, err := dlq.New(b.nats.JS, dlq.Config{Alerts: []alert.Sender{alert.Slack{URL: slack.srv.URL + "/services/T0/B0/s3cret"}},
		AlertWindow: time.Hour, Sweep: dlq.SweepConfig{Interval: -1}})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			require.NoError(t, svc.Stop(context.Background()))
		}
	})

	acme80 := crossing("acme", event.ChannelEmail, 100, 80)
	require.NoError(t, quota.Publish(ctx, b.nats.JS, acme80))
	require.Eventually(t, func() bool { return len(slack.received()) == 1 }, 20*time.Second, 10*time.Millisecond)
	require.Equal(t, ":warning: 1 monthly quota threshold reached\n• acme email 2026-12: 80 % — 80/100", slack.received()[0])
	require.Equal(t, 2, slack.triesSeen(), "the refused first try was retried")

	// Within the window the first alert opened.
	for _, ev := range []quota.Event{crossing("acme", event.ChannelEmail, 100, 100), crossing("globex", event.ChannelSMS, 500, 80),
		crossing("globex", event.ChannelSMS, 500, 100)} {
		require.NoError(t, quota.Publish(ctx, b.nats.JS, ev))
	}
	// acme's 80 % told again after the stream's duplicate window (no
	// Nats-Msg-Id lets the stream drop it), and another kind of event.
	again, err := json.Marshal(acme80)
	require.NoError(t, err)
	_, err = b.nats.JS.Publish(ctx, notification.StatusSubject("acme"), again)
	require.NoError(t, err)
	require.NoError(t, notification.PublishEndpointDisabled(ctx, b.nats.JS, notification.EndpointDisabled{Tenant: "globex",
		EndpointID: "ep-1", URL: "https://hooks.globex.example", Reason: "410 Gone", Time: time.Now()}))
	b.statusSettled(t)
	require.Len(t, slack.received(), 1, "the window is an hour: nothing more is sent before it ends")

	stopped = true
	require.NoError(t, svc.Stop(context.Background())) // flushes the window
	texts := slack.received()
	require.Len(t, texts, 2)
	require.Equal(t, strings.Join([]string{
		":warning: 3 monthly quota thresholds reached",
		"• acme email 2026-12: 100 % — 100/100, the rest of the month is refused",
		"• globex sms 2026-12: 80 % — 400/500",
		"• globex sms 2026-12: 100 % — 500/500, the rest of the month is refused",
	}, "\n"), texts[1])
	for _, text := range texts {
		require.NotContains(t, text, "s3cret")
	}
}

// What cannot be read on notify.status.* is the status feed's to
// dead-letter, not a second time here; but a quota event that cannot be
// read is a threshold nobody would hear of, so it becomes a dead letter of
// its own (which the alerts then carry).
func TestAnUnreadableQuotaEventIsDeadLettered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	b.service(t, dlq.SweepConfig{}, nil)

	_, err := b.nats.JS.Publish(ctx, notification.StatusSubject("acme"), []byte("not json"))
	require.NoError(t, err)
	_, err = b.nats.JS.Publish(ctx, notification.StatusSubject("acme"), []byte(`{"type":"tenant.quota.warning","used":"lots"}`))
	require.NoError(t, err)
	b.statusSettled(t)

	entries := b.dlq(t)
	require.Len(t, entries, 1)
	require.Equal(t, "dlq.STATUS.alerts", entries[0].Subject)
	require.JSONEq(t, `{"type":"tenant.quota.warning","used":"lots"}`, string(entries[0].Data))
}
