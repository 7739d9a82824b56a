package event

import "strings"

// Data is an event's data, decoded by its family: Stock for an
// inventory.* event, Order for any other.
type Data struct {
	Order *OrderData
	Stock *StockData
}

// ReadMsg is the whole check an event gets before it is routed: DecodeMsg
// (either content mode, as header says), then its data by its family. The
// router runs it on every event, and `herald publish` and the Go client
// run it before they publish, so what they let through the router routes,
// and what they refuse it would dead-letter with the same reason. An
// error that is a *ValidationError names every problem of the envelope
// and of the data together, in that order; one wrapping ErrMalformed is a
// payload that is no event at all.
func ReadMsg(header map[string][]string, body []byte) (Event, Data, error) {
	var p problems
	ev, err := decodeMsg(&p, header, body)
	if err != nil {
		return Event{}, Data{}, err
	}
	var data Data
	// Data that could not be read (a binary body that is not JSON) is
	// already a problem of the envelope's.
	if len(ev.Data) > 0 || len(p.list) == 0 {
		data = ev.readData(&p)
	}
	return ev, data, p.err()
}

// Read is ReadMsg of a structured-mode event: the payload is the event.
func Read(payload []byte) (Event, Data, error) { return ReadMsg(nil, payload) }

// readData decodes and validates the data by the event's family, leaving
// its problems in p; nothing when it could not be decoded at all.
func (ev Event) readData(p *problems) Data {
	if strings.HasPrefix(ev.Type, "inventory.") {
		if d, ok := ev.stockData(p); ok {
			return Data{Stock: &d}
		}
		return Data{}
	}
	if d, ok := ev.orderData(p); ok {
		return Data{Order: &d}
	}
	return Data{}
}
