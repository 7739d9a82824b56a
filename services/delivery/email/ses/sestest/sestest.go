// Package sestest is a fake Amazon SES v2 server for tests. It speaks the
// real wire protocol (restJson1: JSON bodies, errors named by the
// X-Amzn-ErrorType header), so the real AWS SDK — and so the real ses
// provider — runs against it unchanged. It serves SendEmail, and
// CreateEmailIdentity and GetEmailIdentity for domains, whose DKIM
// verification a test decides (VerifyDomain, FailDomain).
//
// Faults are decided per request by a function of the call number, so a
// test can script an exact sequence (throttle, then fail, then accept) and a
// load test can inject a deterministic rate.
//
// The fake checks that requests are SigV4-signed (an Authorization header
// naming an access key) but not the signature itself: it tests the
// provider, not AWS's authentication.
package sestest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	netmail "net/mail"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Received is a message the fake accepted: answered with success, with or
// without a message id.
type Received struct {
	From string
	To   []string
	// Raw is the MIME document as sent.
	Raw  []byte
	Tags map[string]string
	// MessageID is the id the fake answered with; empty under NoMessageID.
	MessageID string
}

// Server is a fake SES v2 endpoint. It is safe for concurrent use.
type Server struct {
	srv   *httptest.Server
	done  chan struct{} // closed on cleanup, so no handler outlives the test
	calls atomic.Int64

	faultMu sync.Mutex // serializes fault functions, so they may keep state
	faults  func(call int) Fault

	mu       sync.Mutex
	received []Received
	// identities are the domains registered, by name.
	identities map[string]*identity
}

// New starts a fake and stops it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(func() {
		// Release handlers held by a Timeout first: httptest's Close waits
		// for every handler to return.
		close(s.done)
		s.srv.Close()
	})
	return s
}

// URL is the endpoint to give the SDK (ses.Config.Endpoint).
func (s *Server) URL() string { return s.srv.URL }

// Calls is how many requests arrived, whatever became of them.
func (s *Server) Calls() int { return int(s.calls.Load()) }

// Received lists the accepted messages in the order they were accepted.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Received, len(s.received))
	for i, r := range s.received {
		r.To = slices.Clone(r.To)
		r.Raw = slices.Clone(r.Raw)
		r.Tags = maps.Clone(r.Tags)
		out[i] = r
	}
	return out
}

// Faults sets what each request meets; call counts every request from 1.
// Calls to fn are serialized. Nil (the default) means no faults.
func (s *Server) Faults(fn func(call int) Fault) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	s.faults = fn
}

// Fault is what one request meets instead of (or before) a normal answer.
// The zero Fault is None.
type Fault struct {
	name       string
	status     int
	code       string
	message    string
	retryAfter time.Duration
	delay      time.Duration
	hold       <-chan struct{}
	noID       bool
}

// Faults the fake can inject.
var (
	None = Fault{}
	// ServerError is an internal failure on SES's side.
	ServerError = APIError(http.StatusInternalServerError, "InternalFailure", "The request processing has failed because of an unknown error, exception or failure.")
	// NoMessageID accepts and records the message, as SES would, but
	// answers success without a message id: the sender cannot tell whether
	// it will go out.
	NoMessageID = Fault{name: "NoMessageID", noID: true}
	// InvalidAddress is SES refusing the recipient, whatever it is.
	InvalidAddress = APIError(http.StatusBadRequest, "BadRequestException", "Illegal address")
	// Unauthorized is SES rejecting the credentials.
	Unauthorized = APIError(http.StatusUnauthorized, "UnrecognizedClientException", "The security token included in the request is invalid.")
	// AccountSuspended is an account that may no longer send.
	AccountSuspended = APIError(http.StatusBadRequest, "AccountSuspendedException", "Your account has been suspended and can no longer send email.")
)

// APIError is an error answer: status, the X-Amzn-ErrorType code and
// message — for refusals the named faults do not cover (MessageRejected,
// SendingPausedException, LimitExceededException, …).
func APIError(status int, code, message string) Fault {
	return Fault{name: code, status: status, code: code, message: message}
}

// Throttle is a 429 TooManyRequestsException, with a Retry-After header in
// whole seconds when retryAfter is positive.
func Throttle(retryAfter time.Duration) Fault {
	f := APIError(http.StatusTooManyRequests, "TooManyRequestsException", "Maximum sending rate exceeded.")
	f.name = "Throttle(" + retryAfter.String() + ")"
	f.retryAfter = retryAfter
	return f
}

// Timeout holds the answer back for d, then answers normally. A client that
// gives up first leaves nothing behind: the request is abandoned and the
// message not accepted.
func Timeout(d time.Duration) Fault {
	return Fault{name: "Timeout(" + d.String() + ")", delay: d}
}

// Hold holds the answer until release is closed, then answers normally: a
// send that stays under way for as long as a test needs. A client that
// gives up first leaves nothing behind, as with Timeout.
func Hold(release <-chan struct{}) Fault {
	return Fault{name: "Hold", hold: release}
}

func (f Fault) String() string {
	if f.name == "" {
		return "None"
	}
	return f.name
}

// sendEmailRequest is the part of SendEmail's body the fake understands.
type sendEmailRequest struct {
	FromEmailAddress string
	Destination      struct{ ToAddresses []string }
	Content          struct {
		Raw *struct{ Data []byte } // base64 on the wire, as encoding/json reads []byte
	}
	EmailTags []struct{ Name, Value string }
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	call := int(s.calls.Add(1))
	w.Header().Set("X-Amzn-RequestId", "fake-request-"+strconv.Itoa(call))

	if strings.HasPrefix(r.URL.Path, identitiesPath) {
		s.serveIdentity(w, r, call)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v2/email/outbound-emails" {
		writeError(w, http.StatusNotFound, "UnknownOperationException", "the fake serves only SendEmail, CreateEmailIdentity and GetEmailIdentity")
		return
	}
	if !signed(r.Header.Get("Authorization")) {
		writeError(w, http.StatusForbidden, "UnrecognizedClientException", "Missing or malformed SigV4 Authorization header.")
		return
	}
	// Read to the end: only then does the server watch the connection, and
	// cancel the request's context when a client gives up on a Timeout.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req sendEmailRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "SerializationException", "cannot read the request body: "+err.Error())
		return
	}

	f := s.fault(call)
	if !s.wait(r, f) {
		return
	}
	if f.status != 0 {
		if f.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((f.retryAfter+time.Second-1)/time.Second)))
		}
		writeError(w, f.status, f.code, f.message)
		return
	}

	if req.Content.Raw == nil || len(req.Content.Raw.Data) == 0 {
		writeError(w, http.StatusBadRequest, "BadRequestException", "the fake accepts only raw content")
		return
	}
	if len(req.Destination.ToAddresses) == 0 {
		writeError(w, http.StatusBadRequest, "BadRequestException", "Missing final '@domain'")
		return
	}
	for _, to := range req.Destination.ToAddresses {
		if _, err := netmail.ParseAddress(to); err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestException", "Illegal address")
			return
		}
	}

	got := Received{From: req.FromEmailAddress, To: req.Destination.ToAddresses, Raw: req.Content.Raw.Data, Tags: map[string]string{}}
	if !f.noID {
		got.MessageID = messageID(call)
	}
	for _, t := range req.EmailTags {
		got.Tags[t.Name] = t.Value
	}
	s.mu.Lock()
	s.received = append(s.received, got)
	s.mu.Unlock()
	if f.noID {
		writeJSON(w, http.StatusOK, struct{}{})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"MessageId": got.MessageID})
}

// wait holds the answer as f says (Timeout, Hold). It reports false when
// the request is to be abandoned: its client gave up, or the test ended.
func (s *Server) wait(r *http.Request, f Fault) bool {
	if f.delay <= 0 && f.hold == nil {
		return true
	}
	var timeout <-chan time.Time
	if f.delay > 0 {
		t := time.NewTimer(f.delay)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
	case <-f.hold:
	case <-r.Context().Done():
		return false
	case <-s.done:
		// Cut the connection rather than answer: an empty 200 would read
		// as a success without a message id.
		panic(http.ErrAbortHandler)
	}
	return true
}

func (s *Server) fault(call int) Fault {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	if s.faults == nil {
		return None
	}
	return s.faults(call)
}

// signed reports whether h looks like a SigV4 Authorization header:
// "AWS4-HMAC-SHA256 Credential=<access key id>/<date>/<region>/ses/aws4_request, …".
func signed(h string) bool {
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 Credential=")
	if !ok {
		return false
	}
	key, _, ok := strings.Cut(rest, "/")
	return ok && key != ""
}

// writeError answers the way SES does; the SDK takes the code from the
// header and the message from the body.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("X-Amzn-ErrorType", code)
	writeJSON(w, status, map[string]string{"message": message})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// messageID imitates SES's shape; the call number keeps ids unique within a
// server, the random part across servers.
func messageID(call int) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%016x-%s-000000", call, hex.EncodeToString(b[:]))
}
