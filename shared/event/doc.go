// Package event is the schema of what publishers send Herald: CloudEvents 1.0
// in structured JSON mode with a tenant extension attribute, carrying an order
// or a stock movement.
//
// Decode parses and validates in one step, so a caller holds either a usable
// Event or an error that says every reason it is not one:
//
//	ev, err := event.Decode(payload)
//	if err != nil {
//		// err wraps ErrMalformed (not JSON) or is a *ValidationError.
//	}
//	order, err := ev.OrderData()
//
// Money and quantities are decimal strings ("183.48"), never JSON numbers, so
// no value is ever rounded on its way through Herald.
package event
