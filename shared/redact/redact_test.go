package redact_test

import (
	"errors"
	"net/url"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/redact"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

func TestURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"redis://user:s3cret@redis:6379/0":        "redis://user:***@redis:6379/0",
		"redis://:s3cret@redis:6379":              "redis://:***@redis:6379",
		"nats://token@nats:4222":                  "nats://***@nats:4222",
		"nats://a:p1@n1:4222,nats://a:p2@n2:4222": "nats://a:***@n1:4222,nats://a:***@n2:4222",
		"nats://u:p@ss/w@nats:4222":               "nats://u:***@nats:4222",
		"nats://nats:4222":                        "nats://nats:4222",
		"127.0.0.1:4222":                          "127.0.0.1:4222",
		"":                                        "",
	} {
		require.Equal(t, want, redact.URL(in), in)
	}
}

// The errors that quote a URL in full: net/url's, which go-redis and
// nats.go return as they are, in every spelling they use.
func TestErrorHidesTheSecretHoweverItIsQuoted(t *testing.T) {
	t.Parallel()
	redisURL := func(u string) error { _, err := redis.ParseURL(u); return err }
	natsURL := func(u string) error { _, err := nats.Connect(u); return err }
	for raw, parse := range map[string]func(string) error{
		"redis://user:s3cr%65t@redis:bad/0": redisURL, // %-encoded: the decoded form must go too
		`redis://user:s3"cret@redis:bad/0`:  redisURL, // Go-quoted by url.Error: s3\"cret
		"nats://u:s3cret@nats:bad":          natsURL,
	} {
		err := parse(raw)
		require.Error(t, err, raw)
		require.Contains(t, err.Error(), "s3", "the error leaks before redaction")
		got := redact.Error(err, raw)
		require.NotContains(t, got.Error(), "s3", raw)
		require.Contains(t, got.Error(), "***")
		var uerr *url.Error
		require.ErrorAs(t, got, &uerr, "still the same error underneath")
	}
	plain := errors.New("connection refused")
	require.Same(t, plain, redact.Error(plain, "redis://u:p@h"), "nothing to hide: the same error")
	require.NoError(t, redact.Error(nil, "redis://u:p@h"))
}
