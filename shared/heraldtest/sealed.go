package heraldtest

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// Sealed is a ciphertext a stream holds as the vault seals it: AES-256-GCM,
// its 12-byte nonce first.
type Sealed struct {
	// Stream and Seq are the message: for a bucket, one revision of a key.
	Stream  string
	Seq     uint64
	Subject string
	// KeyID is the key its record says sealed it.
	KeyID string
	Box   []byte
}

// SealedInStreams reads every message every stream of the server still
// holds — every revision of every key of every bucket — and returns every
// sealed value in them: a JSON object's "sealed" member (base64) beside a
// "key_id", at any depth, whichever bucket and record shape it is in.
func SealedInStreams(t testing.TB, js jetstream.JetStream) []Sealed {
	t.Helper()
	var out []Sealed
	names := js.StreamNames(Context(t))
	for name := range names.Name() {
		for _, m := range StreamMessages(t, js, name) {
			var v any
			if json.Unmarshal(m.Data, &v) != nil {
				continue // chunks of documents, and whatever else is not JSON
			}
			for _, s := range sealedIn(v) {
				s.Stream, s.Seq, s.Subject = name, m.Sequence, m.Subject
				out = append(out, s)
			}
		}
	}
	require.NoError(t, names.Err())
	return out
}

func sealedIn(v any) []Sealed {
	var out []Sealed
	switch v := v.(type) {
	case map[string]any:
		keyID, hasID := v["key_id"].(string)
		text, hasBox := v["sealed"].(string)
		if box, err := base64.StdEncoding.DecodeString(text); hasID && hasBox && err == nil {
			out = append(out, Sealed{KeyID: keyID, Box: box})
		}
		for _, member := range v {
			out = append(out, sealedIn(member)...)
		}
	case []any:
		for _, item := range v {
			out = append(out, sealedIn(item)...)
		}
	}
	return out
}

// Reads is what key (32 raw bytes) reads of box, and whether it is text. GCM
// is AES in counter mode under its tag, so whoever holds the key reads the
// plaintext without the additional data the tag binds it to: a retired key
// that reads a record has not retired from it. Text says the key is the one
// box was sealed under; any other key reads random bytes.
func Reads(t testing.TB, key []byte, box Sealed) (string, bool) {
	t.Helper()
	block, err := aes.NewCipher(key)
	require.NoError(t, err)
	const nonceSize, tagSize = 12, 16
	if len(box.Box) < nonceSize+tagSize+1 {
		return "", false
	}
	// The first counter block encrypts the tag; the plaintext starts at the
	// second: the nonce, then the 32-bit counter 2.
	iv := append(append([]byte(nil), box.Box[:nonceSize]...), 0, 0, 0, 2)
	text := make([]byte, len(box.Box)-nonceSize-tagSize)
	cipher.NewCTR(block, iv).XORKeyStream(text, box.Box[nonceSize:len(box.Box)-tagSize])
	return string(text), printable(text)
}

func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			return false
		}
	}
	return true
}
