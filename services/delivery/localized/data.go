package localized

import (
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// Data is what a plain-text template sees — an SMS's or WhatsApp
// message's, an app notification's: the order or the stock item the
// delivery is about.
type Data struct {
	Order *notification.OrderSummary
	Stock *event.Stock
	// Items and Count, in a workflow's digest, are every event it
	// gathered (Order and Stock are the first's).
	Items []notification.DigestItem
	Count int
}

// DataOf is what d's templates see.
func DataOf(d notification.Delivery) Data {
	return Data{Order: d.Order, Stock: d.Stock, Items: d.Digest.List(), Count: d.Digest.Len()}
}
