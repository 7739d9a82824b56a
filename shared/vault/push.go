package vault

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/mail"
	"net/url"
	"strings"
)

// pushProblems checks a push account as its provider (push/fcm, push/apns,
// push/webpush) checks its config, so that an account that would fail at
// every send is refused when it is stored. It returns the fields the type
// takes. Its words name fields, never a secret nor a parser's words about
// one, which may quote it.
func (c Credential) pushProblems(add func(format string, args ...any)) map[string]bool {
	switch c.Type {
	case TypeFCM:
		if _, err := projectOf(c.ServiceAccount); err != "" {
			add("service_account: %s", err)
		}
		return map[string]bool{"endpoint": true, "service_account": true}
	case TypeAPNs:
		c.apnsProblems(add)
		return map[string]bool{"endpoint": true, "auth_key": true, "apns_key_id": true, "team_id": true, "topic": true, "production": true}
	}
	c.webPushProblems(add)
	return map[string]bool{"vapid_public_key": true, "vapid_private_key": true, "contact": true}
}

// serviceAccount is what is checked of a Google service account's key file.
type serviceAccount struct {
	Type        string `json:"type"`
	ProjectID   string `json:"project_id"`
	ClientEmail string `json:"client_email"`
	PrivateKey  string `json:"private_key"`
}

// projectOf is the Firebase project a service account's key file names,
// or what is wrong with the file.
func projectOf(s Secret) (string, string) {
	var a serviceAccount
	switch {
	case s.IsZero():
		return "", "is required for fcm (the service account's key file, JSON)"
	case json.Unmarshal([]byte(s.Reveal()), &a) != nil:
		return "", "is not JSON (the key file the Firebase console downloads)"
	case a.Type != "service_account":
		return "", "is not a service account's key file (its type is not service_account)"
	case a.ProjectID == "":
		return "", "names no project_id"
	case a.ClientEmail == "":
		return "", "has no client_email"
	case !rsaKey(a.PrivateKey):
		return "", "has no PEM RSA private_key"
	}
	return a.ProjectID, ""
}

// rsaKey says whether s is a PEM RSA private key, PKCS#8 or PKCS#1, as
// Google's token signer reads it.
func rsaKey(s string) bool {
	block, _ := pem.Decode([]byte(strings.TrimSpace(s)))
	if block == nil {
		return false
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return true
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	_, ok := key.(*rsa.PrivateKey)
	return err == nil && ok
}

func (c Credential) apnsProblems(add func(format string, args ...any)) {
	if c.APNsKeyID == "" || c.TeamID == "" || c.Topic == "" {
		add("apns_key_id, team_id, topic: all are required for apns")
	}
	if msg := authKeyProblem(c.AuthKey); msg != "" {
		add("auth_key: %s", msg)
	}
	if u, err := url.Parse(c.Endpoint); c.Endpoint != "" && (err != nil || u.Scheme != "https") {
		add("endpoint: %q is not an https URL (APNs speaks HTTP/2 over TLS only)", c.Endpoint)
	}
}

// authKeyProblem is what is wrong with an APNs .p8 key: ES256 signs with
// P-256 only, and apns2 ignores a failure to sign its provider token.
func authKeyProblem(s Secret) string {
	if s.IsZero() {
		return "is required for apns (the .p8 key, PEM)"
	}
	block, _ := pem.Decode([]byte(strings.TrimSpace(s.Reveal())))
	if block == nil {
		return "is not PEM (a .p8 file's contents)"
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if k, ok := key.(*ecdsa.PrivateKey); err != nil || !ok || k.Curve != elliptic.P256() {
		return "is not a PKCS#8 P-256 private key, as ES256 needs"
	}
	return ""
}

func (c Credential) webPushProblems(add func(format string, args ...any)) {
	public, err := decodeBase64URL(c.VAPIDPublicKey)
	if err == nil {
		_, err = ecdh.P256().NewPublicKey(public)
	}
	publicOK := err == nil
	if !publicOK {
		add("vapid_public_key: is not an uncompressed P-256 public key, base64url")
	}
	private, err := decodeBase64URL(c.VAPIDPrivateKey.Reveal())
	var key *ecdh.PrivateKey
	if err == nil {
		key, err = ecdh.P256().NewPrivateKey(private)
	}
	switch {
	case c.VAPIDPrivateKey.IsZero():
		add("vapid_private_key: is required for webpush")
	case err != nil:
		add("vapid_private_key: is not a P-256 private key, base64url")
	case publicOK && string(key.PublicKey().Bytes()) != string(public):
		// Every push service would refuse every message (403), long after
		// the account was stored.
		add("vapid_public_key: is not the public key of vapid_private_key")
	}
	if !contact(c.Contact) {
		add("contact: %q is not a mailto: address or an https: URL", c.Contact)
	}
}

// decodeBase64URL reads base64url with or without padding, as webpush-go
// does.
func decodeBase64URL(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(s), "="))
}

// contact says whether s is a VAPID subject: mailto: an address, or an
// https: URL.
func contact(s string) bool {
	if address, ok := strings.CutPrefix(s, "mailto:"); ok {
		_, err := mail.ParseAddress(address)
		return err == nil
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && u.Host != ""
}

// pushKey is the private key of an fcm or apns account, as base64 of its
// DER: the end of a key file is JSON or PEM armour, which a preview would
// show instead of anything of the key (and a newline in a table).
func (c Credential) pushKey() Secret {
	key := c.AuthKey.Reveal()
	if c.Type == TypeFCM {
		var a serviceAccount
		_ = json.Unmarshal([]byte(c.ServiceAccount.Reveal()), &a) // a file that is not JSON is refused by Validate
		key = a.PrivateKey
	}
	block, _ := pem.Decode([]byte(strings.TrimSpace(key)))
	if block == nil {
		return NewSecret(key)
	}
	return NewSecret(base64.StdEncoding.EncodeToString(block.Bytes))
}
