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
// router turns those fields into subjects, keys and file names.
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
	f.Fuzz(func(t *testing.T, payload []byte) {
		ev, err := event.Decode(payload)
		if err != nil {
			return
		}
		if !event.ValidTenant(ev.Tenant) || ev.SpecVersion != event.SpecVersion || strings.TrimSpace(ev.ID) == "" {
			t.Fatalf("accepted an invalid envelope: %+v", ev)
		}
		if order, err := ev.OrderData(); err == nil {
			o := order.Order
			if o.Revision < 1 || strings.ContainsAny(o.ID, ":\x00\n") || strings.TrimSpace(o.ID) == "" || len(order.Recipients) == 0 {
				t.Fatalf("accepted an invalid order: %+v", o)
			}
			for _, d := range []event.Decimal{o.Totals.Net, o.Totals.Tax, o.Totals.Gross} {
				if !d.Valid() {
					t.Fatalf("accepted a total that is not a decimal: %q", d)
				}
			}
			for _, r := range order.Recipients {
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
