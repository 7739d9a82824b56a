// Package event is the schema of what publishers send Herald: CloudEvents 1.0
// with a tenant extension attribute, carrying an order or a stock movement,
// in structured JSON mode or in binary content mode (attributes in ce-
// headers, the data as the body).
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
// A consumer of messages that may come in either mode calls DecodeMsg with
// the message's header (a nats.Header or an http.Header) and body: binary
// mode, when the header has ce-specversion, decodes to the Event that
// structured mode would, by the same rules.
//
// Money and quantities are decimal strings ("183.48"), never JSON numbers, so
// no value is ever rounded on its way through Herald.
package event
