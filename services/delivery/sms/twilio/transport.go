package twilio

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
)

// maxErrorBody bounds how much of an error answer is read. Twilio's are a
// few hundred bytes; a proxy's error page may be anything.
const maxErrorBody = 64 << 10

// answer is what Twilio (or whatever stood in between) answered one Send.
type answer struct {
	// status is 0 when no answer arrived.
	status int
	header http.Header
	// body and readErr are those of an answer that was not a success;
	// twilio-go decodes it and then forgets it.
	body    []byte
	readErr error
}

func (a *answer) success() bool { return a.status >= 200 && a.status < 300 }

// sendTransport is the transport of one Send's HTTP client. It gives the
// request the Send's context (twilio-go builds it with none), sends it to
// the configured endpoint, and keeps the answer's status, headers and, for
// a failure, body, which twilio-go drops: Retry-After and a proxy's words
// are in them.
type sendTransport struct {
	ctx  context.Context
	next http.RoundTripper
	// endpoint replaces the request's scheme and host, and prefixes its
	// path; nil leaves them as twilio-go made them.
	endpoint *url.URL
	ans      *answer
}

func (t *sendTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(t.ctx)
	if t.endpoint != nil {
		out.URL.Scheme = t.endpoint.Scheme
		out.URL.Host = t.endpoint.Host
		out.URL.Path = t.endpoint.Path + req.URL.Path
		out.URL.RawPath = ""
		out.Host = ""
	}
	resp, err := t.next.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	t.ans.status, t.ans.header = resp.StatusCode, resp.Header
	if !t.ans.success() {
		// Read it all now: twilio-go neither closes an error answer's
		// body nor hands it back, which would hold the connection.
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_ = resp.Body.Close()
		t.ans.body, t.ans.readErr = body, err
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}
