package webhooks_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/shared/webhooks"
)

// disabledEvents are the endpoint_disabled events on the tenant's status
// stream.
func disabledEvents(t *testing.T, js jetstream.JetStream, tenant string) []notification.EndpointDisabled {
	t.Helper()
	var out []notification.EndpointDisabled
	for _, m := range heraldtest.StreamMessages(t, js, "STATUS") {
		var ev notification.EndpointDisabled
		if m.Subject == notification.StatusSubject(tenant) && json.Unmarshal(m.Data, &ev) == nil && ev.Type == notification.EndpointDisabledType {
			out = append(out, ev)
		}
	}
	return out
}

// Disabling an endpoint records its event in the same write; whoever
// announces it — here the worker that disabled it, which published it and
// died before taking it out, then two workers at once — stores it once,
// and once taken out it is not told again.
func TestADisablingIsToldOnceWhoeverAnnouncesIt(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	key, err := vault.ParseKey([]byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="))
	require.NoError(t, err)
	keys, err := vault.NewKeyring(key)
	require.NoError(t, err)
	worker := func() *webhooks.Store {
		s, err := webhooks.Open(ctx, n.JS, keys)
		require.NoError(t, err)
		return s
	}
	s := worker()
	e, _, err := s.Create(ctx, "acme", webhooks.New{URL: "https://erp.acme.example/hook?token=t0ps3cret"})
	require.NoError(t, err)
	d, disabled, err := s.Disable(ctx, "acme", e.ID, "the endpoint answered 410 Gone", "ntf_gone")
	require.NoError(t, err)
	require.True(t, disabled)
	require.Empty(t, disabledEvents(t, n.JS, "acme"), "recorded, not published yet")

	// The disabling worker published it, then died before taking it out.
	require.NoError(t, notification.PublishEndpointDisabled(ctx, n.JS, notification.EndpointDisabled{Tenant: "acme",
		EndpointID: e.ID, URL: e.ShownURL(), Reason: d.DisabledReason, NotificationID: "ntf_gone", Time: d.DisabledAt}))
	var (
		wg        sync.WaitGroup
		errs      = make([]error, 2)
		published = make([]int, 2)
	)
	for i, w := range []*webhooks.Store{worker(), worker()} {
		wg.Go(func() { published[i], errs[i] = w.Announce(ctx, n.JS, "acme") })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.NotZero(t, published[0]+published[1], "the record held it for the next workers")
	told := disabledEvents(t, n.JS, "acme")
	require.Len(t, told, 1, "one event, however many announced it")
	require.Equal(t, notification.EndpointDisabled{Type: notification.EndpointDisabledType, Tenant: "acme", EndpointID: e.ID,
		URL: "https://erp.acme.example/…", Reason: "the endpoint answered 410 Gone", NotificationID: "ntf_gone", Time: d.DisabledAt}, told[0])

	again, err := s.Announce(ctx, n.JS, "acme")
	require.NoError(t, err)
	require.Zero(t, again, "announced once, it is taken out of the record")
	_, disabled, err = s.Disable(ctx, "acme", e.ID, "failing since yesterday", "ntf_late")
	require.NoError(t, err)
	require.False(t, disabled)
	again, err = s.Announce(ctx, n.JS, "acme")
	require.NoError(t, err)
	require.Zero(t, again, "disabled already: nothing more to tell")
	require.Len(t, disabledEvents(t, n.JS, "acme"), 1)
}
