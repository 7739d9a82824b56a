package inbound

import (
	"context"
	"net/http"

	"github.com/heraldhq/herald/shared/report"
)

// PLACEHOLDER for the SES helper: replaced in full.
type snsVerifier struct{ client *http.Client }

func newSNSVerifier(client *http.Client) *snsVerifier { return &snsVerifier{client: client} }

func (h *Handler) sesReports(ctx context.Context, body []byte, k keys) ([]report.Report, error) {
	return nil, refuse(http.StatusNotImplemented, "ses not built")
}
