package inbound

import (
	"net/http"

	"github.com/heraldhq/herald/shared/report"
)

// PLACEHOLDER for the Twilio helper: replaced in full.
func (h *Handler) twilioReports(r *http.Request, body []byte, k keys) ([]report.Report, error) {
	return nil, refuse(http.StatusNotImplemented, "twilio not built")
}
