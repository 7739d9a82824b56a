package event_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/shared/event"
)

// FuzzDecode: whatever a publisher sends, decoding never panics, and an
// event that passes validation holds what validation promises — because the
// router turns those fields into subjects, keys and file names — and reads
// as any other parser reads it: a generic decode that matches keys exactly
// finds the same tenant and order id.
func FuzzDecode(f *testing.F) {
	for _, file := range event.SampleEvents(f) {
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
			// A signal (order.confirmed, order.cancelled) names its order
			// and reaches nobody: its revision and totals may be absent.
			signal := event.IsOrderSignal(ev.Type)
			accounts := o.Buyer.Account != "" || o.Supplier.Account != ""
			if o.Revision < 0 || (o.Revision == 0 && !signal) || !event.ValidID(o.ID, 128) ||
				(o.Kind != event.KindPurchase && o.Kind != event.KindSales) || (len(order.Recipients) == 0 && !accounts && !signal) {
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
				if !d.Valid() && (d != "" || !signal) {
					t.Fatalf("accepted a total that is not a decimal: %q", d)
				}
			}
			for _, r := range order.Recipients {
				if strings.ContainsAny(r.Name, "\r\n\u2028\u2029") {
					t.Fatalf("accepted a recipient name with a line break: %q", r.Name)
				}
				if _, ok := r.Reference(); ok {
					continue // Herald knows where the people it names are reached
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

// FuzzBinaryAgrees: an event structured mode accepts, converted to binary
// mode, is accepted as the same event, and its data reads the same — so a
// publisher may pick either mode and Herald routes alike.
func FuzzBinaryAgrees(f *testing.F) {
	for _, file := range event.SampleEvents(f) {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/s","type":"order.created","tenant":"t","time":"2026-11-30T09:00:00+01:00","ext":7,"data":null}`))
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/s","type":"inventory.low","tenant":"t","datacontenttype":"","data":"text"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		want, err := event.Decode(payload)
		if err != nil {
			return
		}
		header, body, err := event.Binary(payload)
		if err != nil {
			return // an extension whose value no header can carry
		}
		got, err := event.DecodeBinary(header, body)
		if err != nil {
			t.Fatalf("structured mode accepts the event, binary mode refuses it: %v", err)
		}
		if !want.Time.Equal(got.Time) {
			t.Fatalf("time %v in structured mode, %v in binary mode", want.Time, got.Time)
		}
		want.Time, got.Time = time.Time{}, time.Time{}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("structured mode reads %+v, binary mode %+v", want, got)
		}
		_, wantErr := want.OrderData()
		_, gotErr := got.OrderData()
		if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
			t.Fatalf("order data: %v in structured mode, %v in binary mode", wantErr, gotErr)
		}
	})
}
