package delivery_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/maildir"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
)

// unreachable is a provider that is always down.
type unreachable struct{ calls atomic.Int32 }

func (u *unreachable) Send(context.Context, email.Message) (provider.Receipt, error) {
	u.calls.Add(1)
	return provider.Receipt{}, errors.New("connection refused")
}

// A job — a notification its caller wrote, without an event — arrives as
// written: subject, text and HTML, with its attachment, and no template.
// A pinned provider is the only one tried; with a fallback, only that pair
// is, in that order; the chain's first provider gets nothing of either. A
// pin the chain lacks is dead-lettered naming it, and so is an attachment
// of another tenant's. An unpinned job goes
// through the chain, which is what makes "nothing" above mean something.
func TestJobsAreSentAsWrittenThroughTheirPinnedProviders(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	store, err := documents.Open(ctx, n.JS)
	require.NoError(t, err)
	terms, err := store.Put(ctx, "acme/jobs/terms.pdf", "attachment", []byte("%PDF-1.7 terms"))
	require.NoError(t, err)

	dirs := map[string]string{"first": t.TempDir(), "pinned": t.TempDir()}
	var providers []email.Named
	down := &unreachable{}
	for _, name := range []string{"first", "down", "pinned"} {
		if name == "down" {
			providers = append(providers, email.Named{Name: name, Provider: down})
			continue
		}
		sink, err := maildir.New(dirs[name])
		require.NoError(t, err)
		providers = append(providers, email.Named{Name: name, Provider: sink})
	}
	svc, err := newEmail(t, n.JS, config{ChannelConfig: email.ChannelConfig{From: "Orders <orders@acme.example>", Providers: providers}, Config: delivery.Config{Locker: heraldtest.Locker(t), Concurrency: 1, RetryDelay: 50 * time.Millisecond}})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })

	job := func(ref string, pins ...string) notification.Delivery {
		key := notification.JobKey("acme", "idem-"+ref, ref, event.ChannelEmail, "olga@zarya.example")
		return notification.Delivery{
			ID: notification.ID(key), DedupeKey: key, Tenant: "acme", Channel: event.ChannelEmail,
			Priority: notification.PriorityNormal, Recipient: notification.Recipient{Name: "Olga", Address: "olga@zarya.example"},
			Message:     &notification.Message{Subject: "Your terms " + ref, Text: "Plain " + ref + "\n", HTML: "<p>Rich <b>" + ref + "</b></p>"},
			Attachments: []notification.Document{terms}, Providers: pins, CreatedAt: time.Now(),
		}
	}
	pinned, fallback, unknown := job("pin", "pinned"), job("fallback", "down", "pinned"), job("unknown", "nowhere")
	forged := job("forged")
	forged.Attachments = []notification.Document{{Type: "attachment", Object: "globex/payroll.pdf"}}
	_, err = notification.Publish(ctx, n.JS, []notification.Delivery{pinned, fallback, unknown, forged})
	require.NoError(t, err)

	l, err := ledger.Open(ctx, n.JS)
	require.NoError(t, err)
	settled := func(d notification.Delivery, state ledger.State) bool {
		e, err := l.Get(ctx, "acme", d.DedupeKey)
		return err == nil && e.State == state
	}
	require.Eventually(t, func() bool {
		return settled(pinned, ledger.Delivered) && settled(fallback, ledger.Delivered) &&
			len(heraldtest.StreamMessages(t, n.JS, "DLQ")) == 2
	}, 60*time.Second, 20*time.Millisecond)
	var reasons []string
	for _, m := range heraldtest.StreamMessages(t, n.JS, "DLQ") {
		reasons = append(reasons, m.Header.Get(deadletter.HeaderReason))
	}
	require.ElementsMatch(t, []string{
		`permanent: the notification pins provider "nowhere", which is not in the tenant's chain (or the platform's, when the tenant names none)`,
		`forged delivery: attachment globex/payroll.pdf is not tenant "acme"'s`,
	}, reasons)

	// The API accepts any provider name; the ledger, which GET
	// /v1/notifications/{id} reads, says why it failed.
	e, err := l.Get(ctx, "acme", unknown.DedupeKey)
	require.NoError(t, err)
	require.Equal(t, ledger.Failed, e.State)
	require.False(t, e.Retryable)
	require.Contains(t, e.Reason, `pins provider "nowhere"`)
	e, err = l.Get(ctx, "acme", fallback.DedupeKey)
	require.NoError(t, err)
	require.Equal(t, "pinned", e.Provider)
	require.Equal(t, []string{"", "job", "olga@zarya.example"}, []string{e.Order, e.Document, e.Recipient},
		"a job has no order; its document is the job itself")

	// Unpinned, last: once the chain's first provider has it, the worker
	// is past the pinned ones.
	unpinned := job("chain")
	_, err = notification.Publish(ctx, n.JS, []notification.Delivery{unpinned})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return settled(unpinned, ledger.Delivered) }, 60*time.Second, 20*time.Millisecond)

	got := mails(t, dirs["pinned"])
	require.Len(t, got, 2)
	require.ElementsMatch(t, []string{"Your terms pin", "Your terms fallback"}, []string{got[0].Subject, got[1].Subject})
	for _, m := range got {
		ref := m.Subject[len("Your terms "):]
		require.Equal(t, "Plain "+ref+"\r\n", m.Text)
		require.Equal(t, "<p>Rich <b>"+ref+"</b></p>", m.HTML)
		require.Equal(t, map[string][]byte{"terms.pdf": []byte("%PDF-1.7 terms")}, m.Attachments)
	}
	require.Equal(t, int32(1), down.calls.Load(), "the fallback job tried its pin first, once")
	first := mails(t, dirs["first"])
	require.Len(t, first, 1, "the chain's first provider got only the unpinned job")
	require.Equal(t, "Your terms chain", first[0].Subject)
}

// mails reads every message a maildir sink wrote.
func mails(t *testing.T, dir string) []emailtest.Parsed {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
	require.NoError(t, err)
	var out []emailtest.Parsed
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		out = append(out, emailtest.Parse(t, raw))
	}
	return out
}
