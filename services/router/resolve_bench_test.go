package router

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/recipient"
)

// BenchmarkResolve plans one 20-recipient order: composed inline, and
// naming 20 subscribers the router's watched directory holds (with
// preferences set), for the cost of a reference against an address.
//
//	go test -run '^$' -bench BenchmarkResolve -benchmem ./services/router/
func BenchmarkResolve(b *testing.B) {
	ctx := heraldtest.Context(b)
	n := heraldtest.StartNATSWithStreams(b)
	stores, err := recipient.Open(ctx, n.JS)
	require.NoError(b, err)
	inline, refs := make([]map[string]any, 20), make([]map[string]any, 20)
	for i := range 20 {
		id := fmt.Sprintf("u-%02d", i)
		s := recipient.Subscriber{Tenant: "acme", ID: id, Name: fmt.Sprintf("Contact %d", i),
			Email: fmt.Sprintf("c%02d@zarya.example", i), Phone: "+7916123450" + fmt.Sprint(i%10), Locale: "ru", Timezone: "Europe/Moscow"}
		_, err := stores.Subscribers.Put(ctx, s)
		require.NoError(b, err)
		_, err = stores.SetPreferences(ctx, "acme", id, recipient.Choices{"alerts": {event.ChannelSMS: false}}, nil, true)
		require.NoError(b, err)
		inline[i] = map[string]any{"name": s.Name, "role": "supplier", "email": s.Email, "phone": s.Phone,
			"channels": []string{"email", "sms"}, "locale": "ru"}
		refs[i] = map[string]any{"role": "supplier", "subscriber": id}
	}
	dir, err := watchDirectory(ctx, n.JS)
	require.NoError(b, err)
	b.Cleanup(dir.Stop)
	cfg := Config{Recipients: dir}.WithDefaults()
	for _, bc := range []struct {
		name    string
		entries []map[string]any
	}{{"inline", inline}, {"references", refs}} {
		payload := sampleEvent(b, withRecipients(bc.entries...))
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d, err := cfg.decide(nil, payload, now)
				if err != nil || d.planned() != 20 {
					b.Fatalf("planned %d: %v", d.planned(), err)
				}
			}
		})
	}
}
