package router

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// FuzzRoutes: whatever routing configuration an operator writes, loading
// and validating it never panics, and a configuration that validates routes
// the sample event into deliveries whose subjects and keys are well formed.
func FuzzRoutes(f *testing.F) {
	f.Add([]byte("routes:\n  - {event: order.created, kind: purchase, document: purchase_order, roles: [supplier], channels: [email]}\n"))
	f.Add([]byte("channels: [email, whatsapp]\nroutes:\n  - {event: order.created, template: purchase_order, channels: [email, whatsapp], priority: critical}\n"))
	f.Add([]byte("routes:\n  - {event: inventory.low_stock, template: low_stock, roles: [warehouse], channels: [sms]}\nchannels: [sms]\n"))
	f.Add([]byte("routes: []\n"))
	f.Add([]byte("routes:\n  - {event: 'order.*', document: ../../etc/passwd, channels: [email]}\n"))
	sample, err := os.ReadFile("../../examples/events/order.created.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, config []byte) {
		var cfg Config
		dec := yaml.NewDecoder(bytes.NewReader(config))
		dec.KnownFields(true)
		if dec.Decode(&cfg) != nil {
			return
		}
		cfg = cfg.WithDefaults()
		if cfg.Validate() != nil {
			return
		}
		d, err := cfg.decide(nil, sample, time.Unix(0, 0))
		if err != nil {
			t.Fatalf("a valid configuration rejected the sample event: %v", err)
		}
		all := d.Deliveries
		for _, r := range d.Renders {
			if !strings.HasPrefix(r.Object, "acme/") || strings.Contains(r.Object, "..") {
				t.Fatalf("document object %q escapes the tenant's folder", r.Object)
			}
			all = append(all, r.Deliveries...)
		}
		for _, del := range all {
			subject := notification.Subject(del.Channel, del.Priority, del.Tenant)
			if strings.ContainsAny(subject, " *>") || strings.Count(subject, ".") != 3 {
				t.Fatalf("malformed subject %q", subject)
			}
			if del.Channel != event.ChannelEmail && del.Channel != event.ChannelSMS && del.Channel != event.ChannelWhatsApp && del.Channel != event.ChannelWebhook {
				t.Fatalf("unknown channel %q", del.Channel)
			}
			if del.ID != notification.ID(del.DedupeKey) || strings.Count(del.DedupeKey, ":") < 5 {
				t.Fatalf("malformed dedupe key %q", del.DedupeKey)
			}
		}
	})
}
