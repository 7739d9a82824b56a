package alert

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Webhook posts each Summary as JSON to any URL. The shape is stable: fields
// may be added, none renamed or removed. Times are RFC 3339 in UTC; reasons
// in top_reasons are classes (see ReasonClass), the example's is verbatim.
//
//	{
//	  "count": 10000,
//	  "since": "2026-05-04T10:00:00Z",
//	  "until": "2026-05-04T10:01:00Z",
//	  "by_stream": {"NOTIFY > email-normal": 9000, "DOCS > render": 1000},
//	  "by_tenant": {"acme": 7000, "globex": 3000},
//	  "top_reasons": [
//	    {"reason": "faulty: permanent: HTTP 400: Illegal address (request id {id})", "count": 6000},
//	    {"reason": "render failed after {n} tries: rendering {path}: template: missing", "count": 4000}
//	  ],
//	  "example": {
//	    "stream": "NOTIFY", "consumer": "email-normal", "subject": "notify.email.normal.acme",
//	    "tenant": "acme", "reason": "faulty: permanent: HTTP 400: Illegal address (request id fake-123)",
//	    "time": "2026-05-04T10:00:00.123Z"
//	  },
//	  "quotas": [
//	    {"tenant": "acme", "channel": "email", "month": "2026-05", "used": 800, "quota": 1000,
//	     "threshold": 80, "time": "2026-05-04T10:00:30Z"}
//	  ]
//	}
//
// quotas, the monthly quota thresholds tenants reached since the last
// alert, is left out when there are none, and quotas_left_out counts those
// past the first 1,000. A summary of quotas alone has a count of 0, empty
// breakdowns and an empty example.
type Webhook struct {
	// URL is where summaries are posted. Treated as a secret. Required.
	URL string
	// Header is added to every request, for an Authorization header say.
	Header http.Header
	// Client defaults to a client with a transport of its own.
	Client *http.Client
}

// Send posts s to the webhook.
func (w Webhook) Send(ctx context.Context, s Summary) error {
	body, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encoding the alert for the webhook: %w", err)
	}
	return post(ctx, w.Client, w.URL, "the webhook", w.Header, body)
}

func (Webhook) kind() string { return "webhook" }
