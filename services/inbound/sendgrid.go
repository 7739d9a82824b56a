package inbound

import (
	"net/http"

	"github.com/heraldhq/herald/shared/report"
)

// PLACEHOLDER: replaced in full.
func (h *Handler) sendgridReports(r *http.Request, body []byte, k keys) ([]report.Report, error) {
	return nil, refuse(http.StatusNotImplemented, "sendgrid not built")
}
