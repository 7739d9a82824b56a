package alert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/provider"
)

// defaultTimeout bounds a post whose context has no deadline.
const defaultTimeout = 10 * time.Second

// errorCode matches the bodies worth quoting in an error: short codes like
// Slack's. Anything longer might be a page echoing the request, URL and all.
var errorCode = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)

// post sends body as JSON to rawURL. Errors name target, never the URL.
func post(ctx context.Context, client *http.Client, rawURL, target string, header http.Header, body []byte) error {
	if rawURL == "" {
		return fmt.Errorf("%s has no URL", target)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		// err quotes the URL, so it is left out.
		return fmt.Errorf("the URL of %s is not valid", target)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "herald-dlq-alert")
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("posting to %s: %w", target, redact(err, rawURL))
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection can be reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	// Only a short code is quoted: a longer body might echo the request.
	words := http.StatusText(resp.StatusCode)
	if code := strings.TrimSpace(string(answer)); errorCode.MatchString(code) {
		words += " (" + code + ")"
	}
	return fmt.Errorf("%s: %w", target, provider.HTTPError(resp.StatusCode, resp.Header, words))
}

// redact drops the URL from a client error. net/http wraps every error in
// a *url.Error that quotes the URL; what it wraps (a refused connection, a
// timeout) names at most the host, which is no secret. If even that quotes
// a secret part of the URL, only the fact of failing is kept.
func redact(err error, rawURL string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	for _, secret := range secretParts(rawURL) {
		if strings.Contains(msg, secret) {
			if errors.Is(err, context.DeadlineExceeded) {
				return context.DeadlineExceeded
			}
			return errors.New("the request failed")
		}
	}
	return err
}

// secretParts are the parts of a URL that may carry a credential.
func secretParts(rawURL string) []string {
	parts := []string{rawURL}
	u, err := url.Parse(rawURL)
	if err != nil {
		return parts
	}
	if len(u.Path) > 1 {
		parts = append(parts, u.Path)
	}
	if u.RawQuery != "" {
		parts = append(parts, u.RawQuery)
	}
	if p, ok := u.User.Password(); ok && p != "" {
		parts = append(parts, p)
	}
	return parts
}

// defaultClient has a transport of its own: http.DefaultTransport is shared
// with the whole process, whose idle connections anything may close.
var defaultClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
