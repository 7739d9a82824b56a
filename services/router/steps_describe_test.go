package router

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Each step reads as it was written: issue 34's two workflows, step by
// step, as the API and the console show them.
func TestStepsDescribeThemselvesAsWritten(t *testing.T) {
	t.Parallel()
	var got []string
	for _, r := range []Route{orderWorkflow(), stockWorkflow()} {
		for _, st := range r.Steps {
			got = append(got, st.Kind()+": "+st.Describe())
		}
	}
	require.Equal(t, []string{
		"send: send email",
		"wait: wait 24h or order.confirmed",
		"send: send whatsapp, else sms (po_reminder)",
		"wait: wait 24h or order.confirmed",
		"send: send email to buyer (po_unconfirmed)",
		"throttle: throttle 1 per 1h by {{.Stock.SKU}}",
		"digest: digest by {{.Stock.Warehouse}} for 15m, at most 50",
		"window: window 08:00–20:00 mon, tue, wed, thu, fri, sat (recipient time) unless critical",
		"send: send sms, whatsapp",
	}, got)
}

// Spans read as config writes them, not as Go's 24h0m0s.
func TestDurationsReadAsWritten(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		24 * time.Hour: "24h", 48 * time.Hour: "2d", 36 * time.Hour: "36h", time.Hour: "1h", 90 * time.Second: "1m30s",
		15 * time.Minute: "15m", 2*time.Hour + 30*time.Second: "2h30s", 5 * time.Second: "5s",
	} {
		require.Equal(t, want, Duration(d).short(), "%v", d)
	}
}

// A send with neither channels nor roles of its own reads as one, its
// template named after a single space.
func TestABareSendDescribesItselfInOneSpace(t *testing.T) {
	t.Parallel()
	require.Equal(t, "send (purchase_order)", Step{Send: &SendStep{Template: "purchase_order"}}.Describe())
	require.Equal(t, "send", Step{Send: &SendStep{}}.Describe())
}
