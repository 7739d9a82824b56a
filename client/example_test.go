package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/streams"
)

// A purchase order, published over NATS, twice: Herald stores it once.
func Example() {
	url, stop := startHerald() // a NATS server with Herald's streams
	defer stop()

	nc, err := nats.Connect(url)
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		panic(err)
	}
	pub := client.NewNATS(js)

	ev := client.OrderCreated(client.Envelope{Tenant: "acme", Source: "/erp/purchasing", ID: "evt-po-2026-0042-r1"},
		event.Order{
			ID: "PO-2026-0042", Kind: event.KindPurchase, Revision: 1, Currency: "EUR", Locale: "es",
			Buyer:    event.Party{Name: "Frutas del Sur S.L."},
			Supplier: event.Party{Name: "Молочная ферма «Заря»"},
			Lines:    []event.Line{{SKU: "MILK-1L", Description: "Leche entera 1 L", Quantity: "120", UnitPrice: "0.89", TaxRate: "0.10"}},
			Totals:   event.Totals{Net: "106.80", Tax: "10.68", Gross: "117.48"},
		},
		event.Recipient{Name: "Ольга Петрова", Role: "supplier", Email: "olga@zarya.example", Channels: []event.Channel{event.ChannelEmail}})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 2 { // a retry after a lost acknowledgement, say
		receipt, err := pub.Publish(ctx, ev)
		switch {
		case errors.Is(err, client.ErrRetryable):
			fmt.Println("try again later:", err)
		case err != nil:
			fmt.Println("will never be accepted:", err)
		default:
			fmt.Printf("%s on %s: %s #%d, duplicate %t\n", receipt.ID, receipt.Subject, receipt.Stream, receipt.Sequence, receipt.Duplicate)
		}
	}
	// Output:
	// evt-po-2026-0042-r1 on orders.created: ORDERS #1, duplicate false
	// evt-po-2026-0042-r1 on orders.created: ORDERS #1, duplicate true
}

// An invalid event fails where it is made, in the words the router would
// have written in the dead-letter stream.
func ExampleOrderCreated_invalid() {
	ev := client.OrderCreated(client.Envelope{Tenant: "acme", Source: "/erp/purchasing"},
		event.Order{ID: "PO:42", Kind: event.KindPurchase, Revision: 1, Currency: "EUR",
			Totals: event.Totals{Net: "0", Tax: "0", Gross: "0"}},
		event.Recipient{Role: "supplier", Email: "olga@", Channels: []event.Channel{event.ChannelEmail}})

	_, err := ev.Build()
	var invalid *event.ValidationError
	if errors.As(err, &invalid) {
		for _, p := range invalid.Problems {
			fmt.Println(p)
		}
	}
	// Output:
	// data.order.id: "PO:42" may contain only letters, digits, '-', '_' and '.', and must not start with '.'
	// data.recipients[0].email: "olga@" is not an email address (needed for channel email)
}

// startHerald starts an embedded NATS server with Herald's streams, as
// `herald dev` does, and returns its URL and how to stop it.
func startHerald() (url string, stop func()) {
	dir, err := os.MkdirTemp("", "herald-example")
	if err != nil {
		panic(err)
	}
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: dir})
	if err != nil {
		panic(err)
	}
	stop = func() { srv.Shutdown(); _ = os.RemoveAll(dir) }
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if report, err := streams.Apply(ctx, js, streams.Options{}); err != nil || report.Err() != nil {
		panic(errors.Join(err, report.Err()))
	}
	return srv.URL(), stop
}
