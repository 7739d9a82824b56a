package streams_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/streams"
)

// fair is the options of a deployment with scheduling.fair on.
var fair = streams.Options{Templates: []string{"NOTIFY", "DOCS"}}

// byAction lists the consumers a report gives action, as "STREAM > name".
func byAction(r streams.Report, action streams.Action) []string {
	var out []string
	for _, res := range r {
		if res.Kind == "consumer" && res.Action == action {
			out = append(out, res.Stream+" > "+res.Name)
		}
	}
	return out
}

// declaredDurables is every durable declared on NOTIFY and DOCS, as
// "STREAM > name".
func declaredDurables(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, name := range fair.Templates {
		s, err := streams.Find(name)
		require.NoError(t, err)
		for _, c := range s.Consumers {
			out = append(out, name+" > "+c.Config.Durable)
		}
	}
	return out
}

// inHand delivers one message of subject from consumer name and leaves it
// unacknowledged, as a replica holds a send under way.
func inHand(t *testing.T, js jetstream.JetStream, name, subject string) jetstream.Msg {
	t.Helper()
	ctx := heraldtest.Context(t)
	_, err := js.Publish(ctx, subject, []byte("PO-1"))
	require.NoError(t, err)
	c, err := js.Consumer(ctx, "NOTIFY", name)
	require.NoError(t, err)
	batch, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	require.NoError(t, err)
	msg := <-batch.Messages()
	require.NotNil(t, msg, "%s delivers the message", name)
	require.Equal(t, subject, msg.Subject())
	return msg
}

// takesOver asserts that a consumer named name is handed the message
// another held unacknowledged, at once (not after its ack wait).
func takesOver(t *testing.T, js jetstream.JetStream, name, subject string) {
	t.Helper()
	c, err := js.Consumer(heraldtest.Context(t), "NOTIFY", name)
	require.NoError(t, err)
	batch, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	require.NoError(t, err)
	msg := <-batch.Messages()
	require.NotNil(t, msg, "%s is handed the message its predecessor held", name)
	require.Equal(t, subject, msg.Subject())
	require.NoError(t, msg.DoubleAck(heraldtest.Context(t)))
}

// A deployment that served first come, first served has the declared
// durables on NOTIFY and DOCS. Turning scheduling.fair on, the check reports
// them as drift, and apply removes them (the work queue would refuse the
// tenants' consumers beside them), saying so — and a delivery one held
// unacknowledged goes to the tenant's consumer. Applied again, nothing is
// left to remove.
func TestApplyFairRemovesTheFirstComeDurables(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	held := inHand(t, n.JS, "email-normal", "notify.email.normal.acme")

	check, err := streams.Check(ctx, n.JS, fair)
	require.NoError(t, err)
	require.ElementsMatch(t, declaredDurables(t), byAction(check, streams.Extra))
	require.Equal(t, len(declaredDurables(t)), check.Drifted(), "the check exits non-zero")

	report, err := streams.Apply(ctx, n.JS, fair)
	require.NoError(t, err)
	require.NoError(t, report.Err())
	require.ElementsMatch(t, declaredDurables(t), byAction(report, streams.Removed))
	i := slices.IndexFunc(report, func(r streams.Result) bool { return r.Name == "email-normal" })
	require.Equal(t, "removed   consumer NOTIFY > email-normal (first come, first served → per tenant: "+
		"its unacknowledged messages go to the tenants' consumers)", report[i].String())
	names := consumerNames(ctx, t, n.JS, "NOTIFY")
	require.Empty(t, names, "no durable is left to overlap the tenants' consumers")

	_, err = n.JS.CreateConsumer(ctx, "NOTIFY", perTenant("email-normal_acme", "notify.email.normal.acme"))
	require.NoError(t, err, "the tenant's consumer is no longer refused")
	takesOver(t, n.JS, "email-normal_acme", held.Subject())

	again, err := streams.Apply(ctx, n.JS, fair)
	require.NoError(t, err)
	require.Empty(t, byAction(again, streams.Removed))
	require.ElementsMatch(t, declaredDurables(t), byAction(again, streams.Template))
}

// Back to first come, first served: the check reports the tenants'
// consumers as drift, apply removes them and makes the durables, and a
// delivery a tenant's consumer held unacknowledged goes to the durable.
func TestApplyFirstComeTakesOverWhatTenantsConsumersHeld(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATS(t)
	ctx := heraldtest.Context(t)
	report, err := streams.Apply(ctx, n.JS, fair)
	require.NoError(t, err)
	require.NoError(t, report.Err())
	_, err = n.JS.CreateConsumer(ctx, "NOTIFY", perTenant("email-normal_acme", "notify.email.normal.acme"))
	require.NoError(t, err)
	held := inHand(t, n.JS, "email-normal_acme", "notify.email.normal.acme")

	check, err := streams.Check(ctx, n.JS, streams.Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"NOTIFY > email-normal_acme"}, byAction(check, streams.Extra))
	require.ElementsMatch(t, declaredDurables(t), byAction(check, streams.Missing))

	report, err = streams.Apply(ctx, n.JS, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	require.Equal(t, []string{"NOTIFY > email-normal_acme"}, byAction(report, streams.Removed))
	i := slices.IndexFunc(report, func(r streams.Result) bool { return r.Name == "email-normal_acme" })
	require.Contains(t, report[i].String(), "(per tenant → first come, first served: its unacknowledged messages go to the durable)")
	takesOver(t, n.JS, "email-normal", held.Subject())
}

func perTenant(name, subject string) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{Name: name, FilterSubject: subject, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute}
}

func consumerNames(ctx context.Context, t *testing.T, js jetstream.JetStream, stream string) []string {
	t.Helper()
	s, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	var out []string
	names := s.ConsumerNames(ctx)
	for name := range names.Name() {
		out = append(out, name)
	}
	require.NoError(t, names.Err())
	return out
}
