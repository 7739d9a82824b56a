package delivery_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/templates"
)

// The review's saved template loops only for real recipients, so the
// sample check passes; every worker that rendered it then hung, kept alive
// for ever. Bounded, its email fails for good — failed in the ledger,
// dead-lettered saying which bound — and the one worker goes on to the
// next notification. (The review's loop ran 10¹² times; this one runs
// 4·10⁶, which, unbounded, renders and is sent after a while: without the
// bound the test fails rather than hangs.)
func TestATemplateThatRunsAwayForRealRecipientsFailsTheirEmailForGood(t *testing.T) {
	t.Parallel()
	b := &bundle{nats: heraldtest.StartNATSWithStreams(t), ses: sestest.New(t), locker: heraldtest.Locker(t)}
	ctx := heraldtest.Context(t)
	loops := templates.Template{Tenant: "acme", Name: "purchase_order", Locale: "ru", Subject: "Заказ {{.Order.ID}}",
		Text: `{{if ne .Recipient.Name "Olga Petrova"}}{{range 2000}}{{range 2000}}{{end}}{{end}}{{end}}Здравствуйте.`}
	composer, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	_, err = composer.Check(loops)
	require.NoError(t, err, "the sample recipient is spared: the template is stored")
	store, err := templates.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	_, err = store.Put(ctx, loops)
	require.NoError(t, err)
	// Started after the template is stored, the worker has it from the start.
	b.svc = b.worker(t, b.nats.JS, nil) // one worker: the next notification waits for it

	b.publish(t, 1)
	english, err := json.Marshal(purchaseOrder(2, "Olga", "en")) // Herald's own template
	require.NoError(t, err)
	b.publishRaw(t, dedupeKey(2), english)
	require.Eventually(t, func() bool { return len(b.dlq(t)) == 1 && b.sent() == 1 }, 60*time.Second, 20*time.Millisecond)
	const reason = "permanent: rendering ru/purchase_order.body: template exceeded its work bound (20000 steps)"
	require.Equal(t, reason, b.dlq(t)[0].Header.Get(deadletter.HeaderReason))
	failed := b.ledgerEntry(t, 1)
	require.Equal(t, ledger.Failed, failed.State)
	require.Equal(t, reason, failed.Reason)
	require.False(t, failed.Retryable, "rendering it again would run away again")
	require.Equal(t, ledger.Delivered, b.ledgerEntry(t, 2).State)
	require.Equal(t, "Purchase order PO-2 from", emailtest.Parse(t, b.ses.Received()[0].Raw).Subject)
	b.waitSettled(t)
	require.Equal(t, 1, b.calls(), "nothing was sent for the one that ran away")
}
