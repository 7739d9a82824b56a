package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/shared/provider"
)

// ErrGone is what a 410 Gone answer wraps, inside a permanent error: the
// endpoint wants no more webhooks from Herald, and the caller should
// disable it rather than keep sending (errors.Is(err, ErrGone)).
var ErrGone = errors.New("the endpoint is gone (HTTP 410) and wants no more webhooks")

const (
	defaultUserAgent        = "herald-webhook"
	defaultMaxResponseBytes = 64 << 10
	// drainLimit is how much of an answer, past what is read, is read and
	// thrown away so that the connection can carry the next webhook. A
	// longer answer costs its connection instead.
	drainLimit = 256 << 10
	// excerptRunes is how much of an answer an error quotes.
	excerptRunes = 200
)

// Message is one webhook to one endpoint.
type Message struct {
	// ID is the webhook-id: the notification id, or a status event's id.
	// It stays the same on every retry, so that the receiver can drop a
	// duplicate. It must be printable ASCII without spaces or '.'.
	ID string
	// Type is the event type ("notification.delivered"), which the body
	// carries for the receiver; Send names it in errors only.
	Type string
	// URL is the endpoint, http or https. It may embed a credential, so
	// errors name only its host.
	URL string
	// Secrets are the HMAC keys (webhooks.ParseSecret's output) to sign with: the
	// current one, and during a rotation the old one too. At least one.
	Secrets [][]byte
	// Body is the JSON payload, sent and signed byte for byte.
	Body []byte
	// Timestamp is the time of this attempt, the webhook-timestamp.
	// Defaults to now.
	Timestamp time.Time
}

// Sender posts signed webhooks.
type Sender struct {
	// Client makes the requests. Defaults to one NewClient(ClientOptions{})
	// shared by every Sender that has none. Whatever the client says,
	// redirects are not followed.
	Client *http.Client
	// UserAgent is the User-Agent header. Defaults to "herald-webhook".
	UserAgent string
	// MaxResponseBytes is how much of an answer is read, for an error to
	// quote from. Defaults to 64 KiB.
	MaxResponseBytes int64
}

var defaultClient = sync.OnceValue(func() *http.Client { return NewClient(ClientOptions{}) })

// Send posts msg once, signed, and classifies the answer (see the package
// documentation). On a 2xx it returns a receipt whose MessageID is msg.ID:
// an endpoint gives no id of its own, and the webhook-id is what the
// receiver deduplicates by. Errors name the endpoint's host, never its
// path, query or user information.
func (s *Sender) Send(ctx context.Context, msg Message) (provider.Receipt, error) {
	u, err := endpointURL(msg.URL)
	if err != nil {
		return provider.Receipt{}, err
	}
	target := "webhook to " + u.Host
	if msg.Type != "" {
		target = "webhook " + msg.Type + " to " + u.Host
	}
	if err := check(msg); err != nil {
		return provider.Receipt{}, fmt.Errorf("%s: %w", target, err)
	}
	secrets := urlSecrets(msg.URL, u)

	req, err := s.request(ctx, msg)
	if err != nil {
		return provider.Receipt{}, fmt.Errorf("%s: %w", target, err)
	}
	// Nothing has been sent yet, so an expired deadline here is a plain
	// failure, not an ambiguous one.
	if err := ctx.Err(); err != nil {
		return provider.Receipt{}, fmt.Errorf("%s: not sent: %w", target, err)
	}
	resp, err := s.client().Do(req)
	if err != nil {
		err = redact(err, secrets)
		if provider.IsPermanent(err) { // refused before anything was sent
			return provider.Receipt{}, fmt.Errorf("%s: %w", target, err)
		}
		return provider.Receipt{}, fmt.Errorf("%s: %w", target, provider.NetworkError(err))
	}
	defer resp.Body.Close()

	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		drain(resp.Body)
		return provider.Receipt{MessageID: msg.ID}, nil
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, s.maxResponseBytes()))
	drain(resp.Body)
	return provider.Receipt{}, fmt.Errorf("%s: %w", target, classify(resp, excerpt(answer, secrets)))
}

// request builds the signed POST.
func (s *Sender) request(ctx context.Context, msg Message) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, msg.URL, bytes.NewReader(msg.Body))
	if err != nil {
		// err quotes the URL, so it is left out.
		return nil, provider.Permanentf("the endpoint URL is not valid")
	}
	ts := msg.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	ua := s.UserAgent
	if ua == "" {
		ua = defaultUserAgent
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", ua)
	req.Header.Set(HeaderID, msg.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(HeaderSignature, Sign(msg.ID, ts, msg.Body, msg.Secrets...))
	return req, nil
}

// client is s.Client, or the default, made unable to follow redirects: a
// redirect is an answer to classify, never a new destination to post to.
func (s *Sender) client() *http.Client {
	c := s.Client
	if c == nil {
		c = defaultClient()
	}
	nc := *c
	nc.CheckRedirect = noRedirects
	return &nc
}

func (s *Sender) maxResponseBytes() int64 {
	if s.MaxResponseBytes > 0 {
		return s.MaxResponseBytes
	}
	return defaultMaxResponseBytes
}

// endpointURL parses an endpoint's URL. Its errors never quote it.
func endpointURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return nil, provider.Permanentf("webhook: the endpoint has no URL")
	case err != nil:
		return nil, provider.Permanentf("webhook: the endpoint URL is not valid")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, provider.Permanentf("webhook: the endpoint URL must be http or https, not %q", u.Scheme)
	case u.Host == "":
		return nil, provider.Permanentf("webhook: the endpoint URL has no host")
	}
	return u, nil
}

// check refuses a message that cannot be sent as it is.
func check(msg Message) error {
	if msg.ID == "" {
		return provider.Permanentf("the message has no id")
	}
	for _, r := range msg.ID {
		// A '.' would make "id.timestamp.body" ambiguous; anything outside
		// printable ASCII has no place in a header.
		if r <= ' ' || r > '~' || r == '.' {
			return provider.Permanentf("webhook id %q must be printable ASCII without spaces or '.'", msg.ID)
		}
	}
	if len(msg.Secrets) == 0 {
		return provider.Permanentf("the endpoint has no signing secret")
	}
	for _, key := range msg.Secrets {
		if len(key) == 0 {
			return provider.Permanentf("one of the endpoint's signing secrets is empty")
		}
	}
	if !json.Valid(msg.Body) {
		return provider.Permanentf("the body is not JSON")
	}
	return nil
}

// classify says what a non-2xx answer means.
func classify(resp *http.Response, words string) error {
	status := resp.StatusCode
	if words == "" {
		words = http.StatusText(status)
	}
	switch {
	case status == http.StatusGone:
		return provider.Permanent(fmt.Errorf("%w: %s", ErrGone, words))
	case status >= 300 && status < 400:
		to := ""
		if loc, err := resp.Location(); err == nil && loc.Host != "" {
			to = " to " + loc.Host // the host only: a Location may carry a token too
		}
		return provider.Permanentf("redirected (HTTP %d%s), and webhooks follow no redirects: the endpoint's URL needs updating", status, to)
	}
	err := provider.HTTPError(status, resp.Header, words)
	// The specification asks senders to heed Retry-After on any answer
	// (a 503, say), not only on a 429.
	var t *provider.TransientError
	if errors.As(err, &t) && t.RetryAfter == 0 {
		t.RetryAfter = provider.ParseRetryAfter(resp.Header, time.Now())
	}
	return err
}

// drain reads what is left of an answer, up to a limit, so that the
// connection can be reused.
func drain(body io.Reader) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, drainLimit))
}

// excerpt is the start of an answer, fit to quote in an error: the parts
// of the URL that may be secret (an error page often echoes the request)
// replaced, control characters and runs of space collapsed, invalid UTF-8
// replaced, and at most excerptRunes long.
func excerpt(answer []byte, secrets []string) string {
	s := strings.ToValidUTF8(string(answer), "\uFFFD")
	for _, secret := range secrets {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
	if utf8.RuneCountInString(s) > excerptRunes {
		s = string([]rune(s)[:excerptRunes]) + "…"
	}
	return s
}

// minSecretPart is the length from which a single path segment or query
// value counts as possibly secret; shorter ones ("v1", "id=7") are left
// alone so that an excerpt stays readable.
const minSecretPart = 6

// urlSecrets are the parts of an endpoint's URL that may carry a
// credential — the whole URL, its path, query, fragment and password, and
// each longer path segment and query value, raw and decoded — longest
// first, so that a longer part is replaced before a part of it.
func urlSecrets(raw string, u *url.URL) []string {
	parts := []string{raw, u.Path, u.EscapedPath(), u.RawQuery, u.Fragment}
	if p, ok := u.User.Password(); ok {
		parts = append(parts, p)
	}
	if u.User != nil {
		parts = append(parts, u.User.Username())
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if un, err := url.PathUnescape(seg); err == nil {
			parts = append(parts, seg, un)
		}
	}
	for _, pair := range strings.Split(u.RawQuery, "&") {
		parts = append(parts, pair)
		if _, v, ok := strings.Cut(pair, "="); ok {
			parts = append(parts, v)
			if un, err := url.QueryUnescape(v); err == nil {
				parts = append(parts, un)
			}
		}
	}
	var out []string
	for _, p := range parts {
		if len(p) >= minSecretPart || (p != "" && p == u.Path && p != "/") {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// redact drops the URL from a client error. net/http wraps each error in a
// *url.Error that quotes the URL; what it wraps (a refused connection, a
// timeout) names at most the host. Should even that quote a part of the
// URL, the part is replaced in the message, while the error it wraps stays
// reachable for classification (a timeout, a reset).
func redact(err error, secrets []string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	for _, secret := range secrets {
		if strings.Contains(msg, secret) {
			return &redactedError{err: err, secrets: secrets}
		}
	}
	return err
}

// redactedError is an error whose message had parts of a URL in it.
type redactedError struct {
	err     error
	secrets []string
}

func (e *redactedError) Error() string {
	msg := e.err.Error()
	for _, secret := range e.secrets {
		msg = strings.ReplaceAll(msg, secret, "[redacted]")
	}
	return msg
}

func (e *redactedError) Unwrap() error { return e.err }
