package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Sign returns the webhook-signature header for a message: "v1," and the
// base64 HMAC-SHA256 of "id.timestamp.body" (timestamp in unix seconds)
// under each secret, space-separated. Several secrets serve a rotation:
// while the old secret is in its grace period, the message is signed with
// both, and a receiver that knows either one accepts it. With no secrets
// Sign returns "".
//
// id must not contain '.', or the signed content would be ambiguous; Send
// checks that.
func Sign(id string, ts time.Time, body []byte, secrets ...[]byte) string {
	content := signedContent(id, ts, body)
	sigs := make([]string, 0, len(secrets))
	for _, key := range secrets {
		mac := hmac.New(sha256.New, key)
		mac.Write(content)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}

// signedContent is "id.timestamp.body", the bytes every signature covers.
func signedContent(id string, ts time.Time, body []byte) []byte {
	b := make([]byte, 0, len(id)+len(body)+22)
	b = append(b, id...)
	b = append(b, '.')
	b = strconv.AppendInt(b, ts.Unix(), 10)
	b = append(b, '.')
	return append(b, body...)
}
