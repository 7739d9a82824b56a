package inbound

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// snsMessage is the JSON envelope Amazon SNS posts to an HTTP(S)
// subscription
// (https://docs.aws.amazon.com/sns/latest/dg/sns-message-and-json-formats.html).
type snsMessage struct {
	Type      string `json:"Type"`
	MessageID string `json:"MessageId"`
	// Token and SubscribeURL come with the confirmations only.
	Token        string `json:"Token"`
	SubscribeURL string `json:"SubscribeURL"`
	TopicArn     string `json:"TopicArn"`
	// Subject is signed only when the notification has one, so its
	// absence must be told from an empty one.
	Subject          *string `json:"Subject"`
	Message          string  `json:"Message"`
	Timestamp        string  `json:"Timestamp"`
	SignatureVersion string  `json:"SignatureVersion"`
	Signature        string  `json:"Signature"`
	SigningCertURL   string  `json:"SigningCertURL"`
}

// The SNS message types.
const (
	snsNotification = "Notification"
	snsSubscribe    = "SubscriptionConfirmation"
	snsUnsubscribe  = "UnsubscribeConfirmation"
)

// snsSigned lists, by message type, the fields SNS signs in the order it
// signs them
// (https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html).
var snsSigned = map[string][]string{
	snsNotification: {"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"},
	snsSubscribe:    {"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"},
	snsUnsubscribe:  {"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"},
}

// parseSNS reads an SNS envelope. Without a signature it is nobody's word
// (401); the rest is judged once the signature is checked.
func parseSNS(body []byte) (*snsMessage, error) {
	var m snsMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, refuse(http.StatusUnauthorized, "not an SNS message: the body is not JSON")
	}
	if m.Signature == "" {
		return nil, refuse(http.StatusUnauthorized,
			"no Signature: not an SNS message (a subscription with raw message delivery on sends none)")
	}
	if _, ok := snsSigned[m.Type]; !ok {
		return nil, refuse(http.StatusBadRequest, "Type is not %s, %s or %s", snsNotification, snsSubscribe, snsUnsubscribe)
	}
	return &m, nil
}

// signedString is what SNS signed: each signed field of m's type as
// "Name\nValue\n", in SNS's order; a notification's Subject only if it has one.
func (m *snsMessage) signedString() []byte {
	var b strings.Builder
	for _, name := range snsSigned[m.Type] {
		value := ""
		switch name {
		case "Message":
			value = m.Message
		case "MessageId":
			value = m.MessageID
		case "Subject":
			if m.Subject == nil {
				continue
			}
			value = *m.Subject
		case "SubscribeURL":
			value = m.SubscribeURL
		case "Timestamp":
			value = m.Timestamp
		case "Token":
			value = m.Token
		case "TopicArn":
			value = m.TopicArn
		case "Type":
			value = m.Type
		}
		b.WriteString(name + "\n" + value + "\n")
	}
	return []byte(b.String())
}

// snsHost is the host of SNS's regional endpoints, where its signing
// certificates and subscription confirmations are served — in AWS's
// partitions, China's included.
var snsHost = regexp.MustCompile(`^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$`)

// checkSNSURL says whether raw, the message's field named field, is an
// https URL on an SNS host, and returns it as it will be fetched. Anything
// else is refused before it is fetched: the message names the URL, and an
// attacker would name one serving their own certificate — or an internal
// address for Herald to call.
func checkSNSURL(field, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, refuse(http.StatusForbidden, "%s is not a URL", field)
	}
	switch {
	case u.Scheme != "https":
		return nil, refuse(http.StatusForbidden, "%s is not https", field)
	case u.User != nil, u.Port() != "", !snsHost.MatchString(u.Host):
		// u.Host holds any port, so the pattern alone refuses one; the
		// checks before it only make the reason plainer.
		return nil, refuse(http.StatusForbidden, "%s's host %.100q is not sns.<region>.amazonaws.com", field, u.Host)
	}
	return u, nil
}

// checkCertURL is checkSNSURL for SigningCertURL, which also names a .pem
// file, without a query.
func checkCertURL(raw string) (*url.URL, error) {
	u, err := checkSNSURL("SigningCertURL", raw)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(u.Path, ".pem") || u.RawQuery != "" || u.Fragment != "" {
		return nil, refuse(http.StatusForbidden, "SigningCertURL on %s is not a .pem file", u.Host)
	}
	return u, nil
}

// Limits of the SNS verifier.
const (
	// maxCertBytes caps a signing certificate's download (and a
	// subscription confirmation's answer): SNS's are about 2 KiB.
	maxCertBytes = 64 << 10
	// maxCerts is how many certificates are kept: SNS signs with one per
	// region at a time, rotating rarely.
	maxCerts = 64
	// certTTL is how long a certificate is kept at most, so that one SNS
	// has stopped using is dropped before it expires.
	certTTL = 24 * time.Hour
)

// snsVerifier checks SNS signatures with the certificates SNS publishes,
// which it fetches and keeps.
type snsVerifier struct {
	client *http.Client
	// fetch, when set, replaces the HTTP GET of a checked SNS URL. Only the
	// tests set it (export_test.go), to sign with a key of their own: no
	// configuration can, so production trusts SNS's hosts only.
	fetch func(ctx context.Context, rawURL string) ([]byte, error)

	mu    sync.Mutex
	certs map[string]snsCert // by URL
}

// snsCert is a parsed signing certificate and when to stop trusting the copy.
type snsCert struct {
	cert    *x509.Certificate
	expires time.Time
}

// newSNSVerifier verifies with certificates client fetches. It does not
// follow redirects: SNS answers its own URLs, and a redirect would lead
// past the host check.
func newSNSVerifier(client *http.Client) *snsVerifier {
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &snsVerifier{client: &c, certs: map[string]snsCert{}}
}

// snsSignature is a message's signature and the hash it signs.
type snsSignature struct {
	hash  crypto.Hash
	bytes []byte
}

// signature reads m's signature: its version says the hash, SHA1 or SHA256.
func (m *snsMessage) signature() (snsSignature, error) {
	var hash crypto.Hash
	switch m.SignatureVersion {
	case "1":
		hash = crypto.SHA1
	case "2":
		hash = crypto.SHA256
	default:
		return snsSignature{}, refuse(http.StatusForbidden, "SignatureVersion is neither 1 (SHA1) nor 2 (SHA256)")
	}
	sig, err := base64.StdEncoding.DecodeString(m.Signature)
	if err != nil {
		return snsSignature{}, refuse(http.StatusForbidden, "Signature is not base64")
	}
	return snsSignature{hash: hash, bytes: sig}, nil
}

// verify checks m's signature sig with the certificate at certURL, already
// checked to be SNS's. A certificate that cannot be fetched is 503, so that
// SNS sends the message again; any other failure is 403.
func (v *snsVerifier) verify(ctx context.Context, m *snsMessage, sig snsSignature, certURL *url.URL, now time.Time) error {
	cert, err := v.cert(ctx, certURL.String(), now)
	if err != nil {
		return err
	}
	key, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return refuse(http.StatusForbidden, "the certificate at %s holds no RSA key", certURL.Host)
	}
	if err := rsa.VerifyPKCS1v15(key, sig.hash, digest(sig.hash, m.signedString()), sig.bytes); err != nil {
		return refuse(http.StatusForbidden, "the signature does not verify with the certificate at %s", certURL.Host)
	}
	return nil
}

// digest is b's hash, SHA1 or SHA256.
func digest(hash crypto.Hash, b []byte) []byte {
	if hash == crypto.SHA1 {
		sum := sha1.Sum(b)
		return sum[:]
	}
	sum := sha256.Sum256(b)
	return sum[:]
}

// cert is the certificate at certURL, kept from an earlier fetch if it has not
// expired. Two requests missing the same URL at once each fetch it: SNS
// can bear that, and no request waits on another.
func (v *snsVerifier) cert(ctx context.Context, certURL string, now time.Time) (*x509.Certificate, error) {
	v.mu.Lock()
	kept, ok := v.certs[certURL]
	v.mu.Unlock()
	if ok && now.Before(kept.expires) && !now.Before(kept.cert.NotBefore) {
		return kept.cert, nil
	}
	body, err := v.get(ctx, certURL)
	if err != nil {
		return nil, refuse(http.StatusServiceUnavailable, "fetching the signing certificate: %v", err)
	}
	cert, err := parseCert(body, now)
	if err != nil {
		return nil, refuse(http.StatusForbidden, "the signing certificate at SigningCertURL: %v", err)
	}
	expires := now.Add(certTTL)
	if cert.NotAfter.Before(expires) {
		expires = cert.NotAfter
	}
	v.keep(certURL, snsCert{cert: cert, expires: expires})
	return cert, nil
}

// parseCert reads a PEM certificate valid at now.
func parseCert(body []byte, now time.Time) (*x509.Certificate, error) {
	block, _ := pem.Decode(body)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("not a PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not an X.509 certificate: %v", err)
	}
	if now.Before(cert.NotBefore) || now.After(cert.NotAfter) {
		return nil, fmt.Errorf("valid from %s to %s only", cert.NotBefore.Format(time.RFC3339), cert.NotAfter.Format(time.RFC3339))
	}
	return cert, nil
}

// keep adds c to the certificates kept, making room if there is none by
// dropping the one that expires first.
func (v *snsVerifier) keep(certURL string, c snsCert) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.certs[certURL]; !ok && len(v.certs) >= maxCerts {
		first := ""
		for u, kept := range v.certs {
			if first == "" || kept.expires.Before(v.certs[first].expires) {
				first = u
			}
		}
		delete(v.certs, first)
	}
	v.certs[certURL] = c
}

// get fetches rawURL, an SNS URL already checked, and returns at most
// maxCertBytes of what it answers. An answer other than 2xx is an error.
func (v *snsVerifier) get(ctx context.Context, rawURL string) ([]byte, error) {
	if v.fetch != nil {
		return v.fetch(ctx, rawURL)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // without the URL, whose query may hold a subscription's token
		}
		return nil, fmt.Errorf("GET %s: %w", req.URL.Host, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("%s answered %s", req.URL.Host, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCertBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading %s's answer: %w", req.URL.Host, err)
	case len(body) > maxCertBytes:
		return nil, fmt.Errorf("%s answered more than %d bytes", req.URL.Host, maxCertBytes)
	}
	return body, nil
}
