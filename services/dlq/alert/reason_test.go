package alert_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/dlq/alert"
)

func TestReasonClass(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ reason, class string }{
		{"invalid event: tenant: is required", "invalid event: tenant: is required"},
		{"faulty: permanent: HTTP 400: Illegal address (request id fake-123)", "faulty: permanent: HTTP 400: Illegal address (request id {id})"},
		{"faulty: permanent: HTTP 400: Illegal address (request id fake-9876)", "faulty: permanent: HTTP 400: Illegal address (request id {id})"},
		{"render failed after 5 tries: rendering acme/PO-1/invoice.pdf: template: missing", "render failed after {n} tries: rendering {path}: template: missing"},
		{"exhausted 5 deliveries to NOTIFY > email-normal without being settled (worker crashes or timeouts)",
			"exhausted {n} deliveries to NOTIFY > email-normal without being settled (worker crashes or timeouts)"},
		{"smtp: 550 5.1.1 <bob@example.com>: Recipient address rejected", "smtp: 550 5.1.1 <{email}>: Recipient address rejected"},
		{`template: unknown template "welcome-v2"`, `template: unknown template "…"`},
		{"unknown field 'colour' in template", "unknown field '…' in template"},
		{"can't send: status 503", "can't send: status 503"},
		{`Post "https://api.sendgrid.com/v3/mail/send": context deadline exceeded`, `Post "…": context deadline exceeded`},
		{"GET https://example.com/x?sig=abc: 502 Bad Gateway", "GET {url}: 502 Bad Gateway"},
		{"dial tcp 10.0.0.7:587: connect: connection refused", "dial tcp {ip}: connect: connection refused"},
		{"tls: failed to verify certificate: x509: certificate has expired", "tls: failed to verify certificate: x509: certificate has expired"},
		{"lease 4f3c2a1b-9e8d-4c7b-a6f5-0e1d2c3b4a59 expired after 2.5s", "lease {id} expired after {n}"},
		{"provider said request_id=abc123, trace-id: xyz", "provider said request_id={id}, trace-id: {id}"},
		{"message id is required", "message id is required"},
		{"id: ORD-7, retries=3", "id: {id}, retries={n}"},
		{"HTTP/1.1 429 Too Many Requests", "HTTP/1.1 429 Too Many Requests"},
		{"  several\n\tlines   of\r\nerror  ", "several lines of error"},
		{"", "(no reason given)"},
		{" \n ", "(no reason given)"},
	} {
		require.Equal(t, tc.class, alert.ReasonClass(tc.reason), "reason %q", tc.reason)
	}
}

func TestReasonClassIsBounded(t *testing.T) {
	t.Parallel()
	class := alert.ReasonClass("provider rejected the message: " + strings.Repeat("très long explanation ", 20))
	require.Equal(t, 120, utf8.RuneCountInString(class))
	require.True(t, strings.HasSuffix(class, "…"))
	require.True(t, utf8.ValidString(class))
}

func ExampleReasonClass() {
	fmt.Println(alert.ReasonClass("faulty: permanent: HTTP 400: Illegal address (request id fake-123)"))
	fmt.Println(alert.ReasonClass("render failed after 5 tries: rendering acme/PO-1/invoice.pdf: template: missing"))
	// Output:
	// faulty: permanent: HTTP 400: Illegal address (request id {id})
	// render failed after {n} tries: rendering {path}: template: missing
}

// go test -bench ReasonClass -run ^$ ./services/dlq/alert/
func BenchmarkReasonClass(b *testing.B) {
	reason := "faulty: permanent: HTTP 400: Illegal address (request id fake-123)"
	for b.Loop() {
		alert.ReasonClass(reason)
	}
}
