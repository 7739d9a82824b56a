package webhooks

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// SecretPrefix marks a Standard Webhooks symmetric signing secret.
const SecretPrefix = "whsec_"

// The specification asks for a random secret of at least 24 bytes and at
// most 512 bits; NewSecret makes 32, the size of an HMAC-SHA256 key.
const (
	secretSize    = 32
	minSecretSize = 24
	maxSecretSize = 64
)

// NewSecret returns a new random signing secret in the form the
// specification shows to users: "whsec_" and the base64 of 32 random bytes.
func NewSecret() (string, error) {
	key := make([]byte, secretSize)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("webhook: generating a signing secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// ParseSecret decodes a signing secret, with or without its "whsec_"
// prefix, into the HMAC key that Sign takes. It accepts what the official
// libraries accept (standard, padded base64) and refuses a key shorter than
// the specification's 24 bytes. Its errors never quote s: it is a secret.
func ParseSecret(s string) ([]byte, error) {
	// Secrets read from files or environment variables often end in a
	// newline.
	s = strings.TrimPrefix(strings.TrimSpace(s), SecretPrefix)
	if s == "" {
		return nil, errors.New("webhook: the signing secret is empty")
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		// err says only at which byte decoding failed, but the secret's
		// shape is all the reader needs.
		return nil, errors.New("webhook: the signing secret is not " + SecretPrefix + " followed by standard base64")
	}
	if len(key) < minSecretSize || len(key) > maxSecretSize {
		return nil, fmt.Errorf("webhook: the signing secret is %d bytes; it must be %d to %d", len(key), minSecretSize, maxSecretSize)
	}
	return key, nil
}
