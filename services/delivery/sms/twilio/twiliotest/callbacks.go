package twiliotest

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"maps"
	"net/url"
	"slices"
)

// Signature is the X-Twilio-Signature Twilio puts on a status callback
// (https://www.twilio.com/docs/usage/security#validating-requests): the
// base64 HMAC-SHA1, keyed with the auth token, of the full URL called
// followed by every POST parameter's name and value, sorted by name. Written
// from Twilio's description, not with twilio-go's validator, so that tests
// of Herald's verification check it against an independent signer.
func Signature(token, fullURL string, form url.Values) string {
	mac := hmac.New(sha1.New, []byte(token))
	mac.Write([]byte(fullURL))
	for _, name := range slices.Sorted(maps.Keys(form)) {
		for _, v := range form[name] {
			mac.Write([]byte(name + v))
		}
	}
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
