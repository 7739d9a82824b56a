package alert_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/dlq/alert"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
)

// reasonOf is what the router writes as the reason of an event it
// dead-letters.
func reasonOf(payload []byte) string {
	ev, err := event.Decode(payload)
	if err == nil {
		_, err = ev.OrderData()
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestReasonKind(t *testing.T) {
	t.Parallel()
	_, malformedDelivery := notification.Decode([]byte(`{}`))
	refused := fmt.Errorf("ses: %w", provider.Permanentf("HTTP 400: Illegal address"))
	tests := []struct{ reason, kind string }{
		{reasonOf([]byte(`{"id":`)), alert.KindMalformedEvent},
		{reasonOf([]byte(`{"specversion":"1.0"}`)), alert.KindInvalidEvent},
		{malformedDelivery.Error(), alert.KindMalformedMessage},
		{"malformed render request: missing object or type", alert.KindMalformedMessage},
		{"cannot render the document: data.order.lines[0].description: \"\u2603\" (U+2603) has no glyph", alert.KindRenderFailed},
		{"render failed after 20 tries: storing acme/PO-1/purchase_order-r1.pdf: nats: timeout", alert.KindRenderFailed},
		{refused.Error(), alert.KindPermanent},
		{"gave up after 10 tries: ses: HTTP 503", alert.KindGaveUp},
		{"exhausted 5 deliveries to NOTIFY > email-normal without being settled (worker crashes or timeouts)", alert.KindExhausted},
		{"exhausted 5 deliveries; last error: " + refused.Error(), alert.KindExhausted},
		{"something nobody planned for", alert.KindOther},
		{"", alert.KindOther},
	}
	for _, tt := range tests {
		require.NotEmpty(t, tt.kind)
		require.Equal(t, tt.kind, alert.ReasonKind(tt.reason), tt.reason)
		require.Contains(t, alert.ReasonKinds, tt.kind)
	}
}

// 300 events with odd decimals once made 300 reason series: the decimal
// error repeated the publisher's JSON, spaces and all. Their reasons now
// make one kind, and a handful of classes that repeat none of the values.
func TestOddDecimalsMakeBoundedReasons(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../../examples/events/order.created.json")
	require.NoError(t, err)
	const gross = `"gross": "183.48"`
	require.Contains(t, string(b), gross)
	odd := func(i int) string { // as a publisher might write it
		list := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("%d, ", i), i%40+1), ", ")
		switch i % 6 {
		case 0:
			return fmt.Sprintf("%d.%de%d", i, i*7, i%300)
		case 1:
			return fmt.Sprintf(`"%d,%02d"`, i, i%100)
		case 2:
			return "{ \"amount\": [" + list + "] }"
		case 3:
			return "[" + list + "]"
		case 4:
			return fmt.Sprintf(`"%d.%d EUR"`, i, i)
		default:
			return []string{"true", "false"}[i%2]
		}
	}
	kinds, classes := map[string]bool{}, map[string]bool{}
	for i := range 300 {
		payload := strings.Replace(string(b), gross, `"gross": `+odd(i), 1)
		reason := reasonOf([]byte(payload))
		require.NotEmpty(t, reason, "the odd decimal %s is refused", odd(i))
		kinds[alert.ReasonKind(reason)] = true
		classes[alert.ReasonClass(reason)] = true
	}
	require.Equal(t, map[string]bool{alert.KindInvalidEvent: true}, kinds)
	require.LessOrEqual(t, len(classes), 6, "one class per kind of JSON value at most")
}
