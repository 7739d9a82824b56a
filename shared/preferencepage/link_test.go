package preferencepage_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/preferencepage"
	"github.com/heraldhq/herald/shared/unsubscribe"
)

var secret = []byte(strings.Repeat("s", 32))

// token is the last segment of a link.
func token(link string) string { return link[strings.LastIndex(link, "/")+1:] }

func TestALinkNamesOneSubscriberAndCannotBeAltered(t *testing.T) {
	t.Parallel()
	s, err := preferencepage.NewSigner(secret, "https://herald.example.com/")
	require.NoError(t, err)
	olga := preferencepage.Whose{Tenant: "acme", Subscriber: "u-olga / Ольга"}
	link := s.Link(olga)
	require.True(t, strings.HasPrefix(link, "https://herald.example.com/p/"), link)
	w, err := s.Verify(token(link))
	require.NoError(t, err)
	require.Equal(t, olga, w)

	other, err := preferencepage.NewSigner([]byte(strings.Repeat("t", 32)), "https://herald.example.com")
	require.NoError(t, err)
	payload, sig, _ := strings.Cut(token(link), ".")
	ivan, _, _ := strings.Cut(s.Token(preferencepage.Whose{Tenant: "acme", Subscriber: "u-ivan"}), ".")
	globex, _, _ := strings.Cut(s.Token(preferencepage.Whose{Tenant: "globex", Subscriber: olga.Subscriber}), ".")
	for name, bad := range map[string]string{
		"another deployment's": token(other.Link(olga)),
		"another subscriber":   ivan + "." + sig,
		"another tenant":       globex + "." + sig,
		"no signature":         payload,
		"truncated":            token(link)[:len(token(link))-2],
		"empty":                "",
		"no subscriber":        s.Token(preferencepage.Whose{Tenant: "acme"}),
		"no tenant":            s.Token(preferencepage.Whose{Subscriber: "u-olga"}),
		"a control character":  s.Token(preferencepage.Whose{Tenant: "acme", Subscriber: "u-\x07olga"}),
	} {
		_, err := s.Verify(bad)
		require.ErrorIs(t, err, preferencepage.ErrRefused, name)
	}

	_, err = preferencepage.NewSigner([]byte("short"), "https://herald.example.com")
	require.Error(t, err)
	_, err = preferencepage.NewSigner(secret, "herald.example.com")
	require.Error(t, err)
}

// The links' key is derived from the secret the document and unsubscribe
// links share, under a label of its own: a payload signed under the raw
// secret, or as an unsubscribe link is signed, is not a preference link.
func TestALinkSignedAsAnotherKindOfLinkIsRefused(t *testing.T) {
	t.Parallel()
	s, err := preferencepage.NewSigner(secret, "https://herald.example.com")
	require.NoError(t, err)
	genuine := s.Token(preferencepage.Whose{Tenant: "acme", Subscriber: "u-olga"})
	payload, _, _ := strings.Cut(genuine, ".")
	signed := func(key []byte) string {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(payload))
		return payload + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:16])
	}
	unsubscribeKey := hmac.New(sha256.New, secret)
	unsubscribeKey.Write([]byte("herald unsubscribe links v1"))
	for name, forged := range map[string]string{
		"under the secret itself":   signed(secret),
		"under the unsubscribe key": signed(unsubscribeKey.Sum(nil)),
	} {
		_, err := s.Verify(forged)
		require.ErrorIs(t, err, preferencepage.ErrRefused, name)
	}
	_, err = s.Verify(genuine)
	require.NoError(t, err)
	// And the other way: no preference token opens an unsubscribe link.
	u, err := unsubscribe.NewSigner(secret, "https://herald.example.com")
	require.NoError(t, err)
	_, err = u.Verify(genuine)
	require.ErrorIs(t, err, unsubscribe.ErrRefused)
}
