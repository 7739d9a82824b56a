package pdf

import (
	"context"

	"github.com/heraldhq/herald/services/pdf/render"
	"github.com/heraldhq/herald/shared/documents"
)

// Maroto renders with the maroto-based renderer in render/.
type Maroto struct{}

// Render renders the request's document in the order's language, dated by
// the event, so the same request always gives the same bytes.
func (Maroto) Render(_ context.Context, req documents.Request) ([]byte, error) {
	return render.PDF(render.Input{DocumentType: req.Type, Order: req.Order, Locale: req.Locale, Date: req.Date})
}
