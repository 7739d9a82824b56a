package webhook

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/webhooks"
)

// An endpoint_disabled event goes to the tenant's other active endpoints
// that want it — never to the endpoint disabled — once per disabling: the
// same endpoint disabled again later is news again.
func TestFeedDisabledTellsTheOtherEndpointsOncePerDisabling(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	endpoints := []webhooks.Endpoint{
		{ID: "we_gone", Status: webhooks.Active, Events: webhooks.DefaultEvents},
		{ID: "we_all", Status: webhooks.Active, Events: webhooks.DefaultEvents},
		{ID: "we_failed_only", Status: webhooks.Active, Events: []string{"notification.failed"}},
		{ID: "we_off", Status: webhooks.Disabled, Events: webhooks.DefaultEvents},
	}
	ev := notification.EndpointDisabled{Type: notification.EndpointDisabledType, Tenant: "acme", EndpointID: "we_gone",
		URL: "https://erp.acme.example/…", Reason: "the endpoint answered 410 Gone", Time: at}
	first, err := feedDisabled(ev, endpoints, at)
	require.NoError(t, err)
	require.Len(t, first, 1)
	d := first[0]
	require.Equal(t, "we_all", d.Recipient.Address)
	require.Equal(t, notification.FeedTemplate, d.Template, "its own outcome feeds nothing")
	var body Body
	require.NoError(t, json.Unmarshal(d.Payload, &body))
	require.Equal(t, notification.EndpointDisabledType, body.Type)

	again, err := feedDisabled(ev, endpoints, at.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, d.DedupeKey, again[0].DedupeKey, "the same disabling told again is the same webhook")
	ev.Time = at.Add(24 * time.Hour)
	later, err := feedDisabled(ev, endpoints, at)
	require.NoError(t, err)
	require.NotEqual(t, d.DedupeKey, later[0].DedupeKey, "disabled again after being enabled is another webhook")
}
