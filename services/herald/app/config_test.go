package app_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/herald/app"
)

func write(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "herald.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	return path
}

func TestLoad(t *testing.T) {
	t.Parallel()
	cfg, err := app.Load(write(t, `
nats: {url: "nats://nats:4222"}
router:
  channels: [email, sms]
  routes:
    - event: order.shipped
      document: delivery_note
      channels: [email]
email:
  from: "Orders <orders@acme.example>"
  providers:
    - {type: maildir, dir: /var/spool/herald}
`))
	require.NoError(t, err)
	require.Equal(t, "nats://nats:4222", cfg.NATS.URL)
	require.Len(t, cfg.Router.Routes, 1)
	require.Equal(t, "delivery_note", cfg.Router.Routes[0].Document)
	require.Equal(t, "/var/spool/herald", cfg.Email.Providers[0].Dir)

	empty, err := app.Load("")
	require.NoError(t, err)
	require.Equal(t, app.Config{}, empty)
}

func TestLoadRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	_, err := app.Load(write(t, "email:\n  form: \"Orders <orders@acme.example>\"\n"))
	require.ErrorContains(t, err, "line 2: field form not found")
}

func TestNewNamesTheFieldAtFault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"log level", "log: {level: loud}", `log.level: "loud" must be debug, info, warn or error`},
		{"provider type", "email: {from: a@b.example, providers: [{type: pigeon}]}", `email.providers[0].type: "pigeon" is not a provider`},
		{"maildir without dir", "email: {from: a@b.example, providers: [{type: maildir}]}", `email.providers[0].dir: is required for maildir`},
		{"no from", "email: {providers: [{type: maildir, dir: /tmp/x}]}", `email.from: "" is not an address`},
		{"no providers", "email: {from: a@b.example}", `email.providers: at least one provider is required`},
		{"route to a missing template", "router: {routes: [{event: order.created, template: quote, channels: [email]}]}",
			`router.routes[0].template: no email template "quote"`},
		{"bad route", "router: {routes: [{event: order.created, document: quote, channels: [email]}]}",
			`router.routes[0].document: "quote" is not a document type`},
		{"replicas", "streams: {replicas: 7}", `streams.replicas: 7 must be between 1 and 5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := app.Load(write(t, tt.yaml))
			require.NoError(t, err)
			_, err = app.New(cfg, slog.New(slog.DiscardHandler))
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestNewRefusesUnknownService(t *testing.T) {
	t.Parallel()
	cfg := app.Config{Services: []string{"router", "fax"}}
	_, err := app.New(cfg, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, `services: "fax" is not a service`)
}
