package inbound

import "context"

// FetchSNSWith has h fetch SNS signing certificates and confirm SNS
// subscriptions through fetch instead of HTTP, so that a test can sign
// with a key of its own. The URLs are checked first, as always: fetch is
// only ever asked for https://sns.<region>.amazonaws.com URLs. It exists
// in tests only; nothing in production can trust another certificate.
func FetchSNSWith(h *Handler, fetch func(ctx context.Context, url string) ([]byte, error)) {
	h.sns.fetch = fetch
}
