package event_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald/shared/event"
)

// FuzzDecode: whatever a publisher sends, decoding never panics, and an
// event that passes validation holds what validation promises — because the
// router turns those fields into subjects, keys and file names — and reads
// as any other parser reads it: a generic decode that matches keys exactly
// finds the same tenant and order id.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("../../examples/events/*.json")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/s","type":"order.created","tenant":"t","data":{}}`))
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/s","type":"order.created","tenant":"t","data":{"order":{"id":"a:b","revision":-1,"totals":{"gross":1e400}}}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/s","type":"order.created","tenant":"a","TENANT":"b","data":{}}`))
	f.Add([]byte("{\"specversion\":\"1.0\",\"id\":\"x\",\"source\":\"/s\",\"type\":\"order.created\",\"tenant\":\"t\",\"data\":{\"order\":{\"id\":\"\\ud800\"}}}"))
	f.Fuzz(func(t *testing.T, payload []byte) {
		ev, err := event.Decode(payload)
		if err != nil {
			return
		}
		if !event.ValidTenant(ev.Tenant) || ev.SpecVersion != event.SpecVersion || !event.ValidID(ev.ID, 256) {
			t.Fatalf("accepted an invalid envelope: %+v", ev)
		}
		var generic struct {
			Tenant *string `json:"tenant"`
			Data   struct {
				Order struct {
					ID *string `json:"id"`
				} `json:"order"`
			} `json:"data"`
		}
		_ = json.Unmarshal(payload, &generic)
		if generic.Tenant == nil || *generic.Tenant != ev.Tenant {
			t.Fatalf("tenant %q accepted, but a generic parser reads %v", ev.Tenant, generic.Tenant)
		}
		if order, err := ev.OrderData(); err == nil {
			o := order.Order
			if o.Revision < 1 || !event.ValidID(o.ID, 128) || len(order.Recipients) == 0 {
				t.Fatalf("accepted an invalid order: %+v", o)
			}
			if id := generic.Data.Order.ID; id == nil || *id != o.ID {
				t.Fatalf("order id %q accepted, but a generic parser reads %v", o.ID, id)
			}
			for _, name := range []string{o.Buyer.Name, o.Supplier.Name} {
				if strings.ContainsAny(name, "\r\n\u2028\u2029") {
					t.Fatalf("accepted a party name with a line break: %q", name)
				}
			}
			for _, d := range []event.Decimal{o.Totals.Net, o.Totals.Tax, o.Totals.Gross} {
				if !d.Valid() {
					t.Fatalf("accepted a total that is not a decimal: %q", d)
				}
			}
			for _, r := range order.Recipients {
				if strings.ContainsAny(r.Name, "\r\n\u2028\u2029") {
					t.Fatalf("accepted a recipient name with a line break: %q", r.Name)
				}
				for _, c := range r.Channels {
					if r.Address(c) == "" {
						t.Fatalf("accepted channel %s without an address: %+v", c, r)
					}
				}
			}
			if _, err := json.Marshal(order); err != nil {
				t.Fatalf("a valid order does not encode: %v", err)
			}
		}
		_, _ = ev.StockData()
	})
}
