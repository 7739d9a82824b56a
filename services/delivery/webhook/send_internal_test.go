package webhook

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExcerpt(t *testing.T) {
	t.Parallel()
	secrets := []string{"tok_abcdef123456"}
	require.Equal(t, "Cannot POST /hooks/[redacted] (bad)", excerpt([]byte("Cannot POST /hooks/tok_abcdef123456\r\n\t (bad)\x00"), secrets))
	long := excerpt([]byte(strings.Repeat("é", 1000)), nil)
	require.Equal(t, excerptRunes+1, len([]rune(long)), "capped, with an ellipsis")
	require.Equal(t, "a\uFFFDb", excerpt([]byte("a\xffb"), nil))
}

func TestRedactKeepsTheClassButNotTheSecret(t *testing.T) {
	t.Parallel()
	raw := "https://hooks.example.com/in/tok_abcdef123456?sig=qwertyuiop"
	u, err := url.Parse(raw)
	require.NoError(t, err)
	// An inner error that quotes the path, as a proxy or a TLS library
	// might; net/http's own *url.Error quotes the whole URL.
	inner := fmt.Errorf("reading /in/tok_abcdef123456?sig=qwertyuiop: %w", syscall.ECONNRESET)
	err = redact(&url.Error{Op: "Post", URL: raw, Err: inner}, urlSecrets(raw, u))
	require.NotContains(t, err.Error(), "tok_abcdef123456")
	require.NotContains(t, err.Error(), "qwertyuiop")
	require.NotContains(t, err.Error(), "Post")
	require.True(t, errors.Is(err, syscall.ECONNRESET), "still classifiable as a reset")

	plain := errors.New("dial tcp 203.0.113.9:443: connect: connection refused")
	require.Equal(t, plain, redact(&url.Error{Op: "Post", URL: raw, Err: plain}, urlSecrets(raw, u)))
}
