package sendgridtest

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// EventSignature is the X-Twilio-Email-Event-Webhook-Signature SendGrid
// puts on a post of its signed Event Webhook: base64 of the ASN.1 ECDSA
// signature, with the account's private key, of SHA-256(timestamp ||
// body), timestamp being the X-Twilio-Email-Event-Webhook-Timestamp it
// sends beside it.
func EventSignature(key *ecdsa.PrivateKey, timestamp string, body []byte) (string, error) {
	digest := sha256.Sum256(append([]byte(timestamp), body...))
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest[:])
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sig), nil
}
