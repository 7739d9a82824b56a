// Package sendgridtest is a fake SendGrid v3 Mail Send API for tests, with
// the part of the Domain Authentication API that registers and validates a
// sending domain (a test decides when its records are found: VerifyDomain).
//
// It speaks SendGrid's wire protocol — bearer-key authentication, the v3
// mail JSON schema, 202 with X-Message-Id, SendGrid's error bodies — so the
// real sendgrid-go client, and Herald's provider built on it, run against it
// unchanged. Faults are injected per call, to exercise every way a send can
// fail: server errors, throttling, timeouts, a missing message id, refusals.
package sendgridtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	netmail "net/mail"
	"net/textproto"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/services/delivery/email/emailtest"
)

// Fault is what the fake does to one call instead of, or before, answering
// it normally. The zero Fault is None.
type Fault struct {
	kind  faultKind
	delay time.Duration
}

type faultKind int

const (
	none faultKind = iota
	serverError
	throttle
	timeout
	noMessageID
	invalidAddress
	unauthorized
)

// The faults without parameters.
var (
	// None answers normally.
	None = Fault{}
	// ServerError answers 500.
	ServerError = Fault{kind: serverError}
	// NoMessageID accepts and records the message, as SendGrid would, but
	// answers 202 without an X-Message-Id header.
	NoMessageID = Fault{kind: noMessageID}
	// InvalidAddress answers SendGrid's 400 for an invalid recipient,
	// whatever the body.
	InvalidAddress = Fault{kind: invalidAddress}
	// Unauthorized answers SendGrid's 401 for a rejected key, whatever the
	// key.
	Unauthorized = Fault{kind: unauthorized}
)

// Throttle answers 429 with SendGrid's rate-limit body and headers, and
// Retry-After in whole seconds (omitted when retryAfter is under a second).
func Throttle(retryAfter time.Duration) Fault { return Fault{kind: throttle, delay: retryAfter} }

// Timeout waits d and then answers normally. A client that gives up first
// leaves nothing recorded, and closing the server cuts the wait short.
func Timeout(d time.Duration) Fault { return Fault{kind: timeout, delay: d} }

func (f Fault) String() string {
	switch f.kind {
	case serverError:
		return "ServerError"
	case throttle:
		return fmt.Sprintf("Throttle(%s)", f.delay)
	case timeout:
		return fmt.Sprintf("Timeout(%s)", f.delay)
	case noMessageID:
		return "NoMessageID"
	case invalidAddress:
		return "InvalidAddress"
	case unauthorized:
		return "Unauthorized"
	}
	return "None"
}

// Received is a message the fake accepted, with what SendGrid would put in
// the email: the first recipient of the first personalization, and that
// personalization's subject, headers and custom_args over the message's.
type Received struct {
	// MessageID is the X-Message-Id the fake answered with; empty under
	// NoMessageID.
	MessageID              string
	From, To               string // addresses
	FromName, ToName       string
	Subject, Text          string // Text joins the text/plain content
	HTML                   string // joins the text/html content
	Headers                map[string]string
	CustomArgs             map[string]string
	Attachments            map[string][]byte // decoded, by file name
	AttachmentTypes        map[string]string // content type, by file name
	AttachmentDispositions map[string]string // disposition, by file name
}

// Parsed is the message as a mail client would show it, for emailtest.
func (r Received) Parsed() emailtest.Parsed {
	header := netmail.Header{}
	for k, v := range r.Headers {
		k = textproto.CanonicalMIMEHeaderKey(k)
		header[k] = append(header[k], v)
	}
	attachments := maps.Clone(r.Attachments)
	if attachments == nil {
		attachments = map[string][]byte{}
	}
	return emailtest.Parsed{
		Subject:     r.Subject,
		From:        r.From,
		To:          r.To,
		MessageID:   header.Get("Message-Id"),
		Text:        r.Text,
		HTML:        r.HTML,
		Header:      header,
		Attachments: attachments,
	}
}

// Server is a fake SendGrid API. It is safe for concurrent use.
type Server struct {
	srv    *httptest.Server
	apiKey string
	// closing ends every pending Timeout, so that closing never waits.
	closing chan struct{}

	mu       sync.Mutex
	calls    int
	faults   func(call int) Fault
	received []Received
	domains  []*Domain
}

// New starts a fake that accepts apiKey, and closes it when t ends.
func New(t testing.TB, apiKey string) *Server {
	s := &Server{apiKey: apiKey, closing: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v3/mail/send", s.mailSend)
	mux.HandleFunc("POST /v3/whitelabel/domains", s.createDomain)
	mux.HandleFunc("POST /v3/whitelabel/domains/{id}/validate", s.validateDomain)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, apiError{Message: "resource not found"})
	})
	s.srv = httptest.NewServer(s.injectFaults(mux))
	t.Cleanup(func() {
		close(s.closing)
		s.srv.Close()
	})
	return s
}

// URL is the base URL to give the provider as its endpoint.
func (s *Server) URL() string { return s.srv.URL }

// Faults sets what happens to each call from now on; call counts every
// request since the server started, from 1. nil means no faults.
func (s *Server) Faults(fn func(call int) Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = fn
}

// Calls is how many requests the server has received, whatever became of
// them.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Received returns the accepted messages, in the order they were accepted.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

func (s *Server) injectFaults(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.calls++
		call, faults := s.calls, s.faults
		s.mu.Unlock()

		// Called unlocked, so that fn may ask the server about itself.
		fault := None
		if faults != nil {
			fault = faults(call)
		}
		switch fault.kind {
		case serverError:
			writeError(w, http.StatusInternalServerError, apiError{Message: "An internal server error occurred."})
			return
		case throttle:
			throttled(w, fault.delay)
			return
		case invalidAddress:
			writeError(w, http.StatusBadRequest, invalidRecipient(0, 0))
			return
		case unauthorized:
			writeError(w, http.StatusUnauthorized, badKey)
			return
		case timeout:
			wait := time.NewTimer(fault.delay)
			defer wait.Stop()
			select {
			case <-wait.C:
			case <-r.Context().Done():
				// ErrAbortHandler drops the connection without an answer
				// or a log line; returning would send an empty 200.
				panic(http.ErrAbortHandler)
			case <-s.closing:
				panic(http.ErrAbortHandler)
			}
		}
		next.ServeHTTP(&faultWriter{ResponseWriter: w, fault: fault}, r.WithContext(context.WithValue(r.Context(), faultKey{}, fault)))
	})
}

// faultKey carries a call's fault to the handler, for faults that change
// what is recorded.
type faultKey struct{}

// faultWriter applies faults that change a normal answer.
type faultWriter struct {
	http.ResponseWriter
	fault Fault
}

func (w *faultWriter) WriteHeader(status int) {
	if w.fault.kind == noMessageID {
		w.Header().Del("X-Message-Id")
	}
	w.ResponseWriter.WriteHeader(status)
}

// The v3 mail/send schema, as far as Herald uses it.
type (
	address struct {
		Email string `json:"email"`
		Name  string `json:"name"`
	}
	personalization struct {
		To         []address         `json:"to"`
		From       *address          `json:"from"`
		Subject    string            `json:"subject"`
		Headers    map[string]string `json:"headers"`
		CustomArgs map[string]string `json:"custom_args"`
	}
	mailSend struct {
		Personalizations []personalization `json:"personalizations"`
		From             *address          `json:"from"`
		Subject          string            `json:"subject"`
		Content          []struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"content"`
		Attachments []struct {
			Content     string `json:"content"`
			Type        string `json:"type"`
			Filename    string `json:"filename"`
			Disposition string `json:"disposition"`
		} `json:"attachments"`
		Headers    map[string]string `json:"headers"`
		CustomArgs map[string]string `json:"custom_args"`
		TemplateID string            `json:"template_id"`
	}
)

func (s *Server) mailSend(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.apiKey {
		writeError(w, http.StatusUnauthorized, badKey)
		return
	}
	var req mailSend
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, apiError{Message: "Bad Request"})
		return
	}
	got, problems := received(req)
	if len(problems) > 0 {
		writeError(w, http.StatusBadRequest, problems...)
		return
	}
	if fault, _ := r.Context().Value(faultKey{}).(Fault); fault.kind != noMessageID {
		got.MessageID = rand.Text()
	}
	s.mu.Lock()
	s.received = append(s.received, got)
	s.mu.Unlock()
	w.Header().Set("X-Message-Id", got.MessageID)
	w.WriteHeader(http.StatusAccepted)
}

// received checks req as SendGrid does, reporting every problem at once.
func received(req mailSend) (Received, []apiError) {
	var problems []apiError
	problem := func(field, message string) {
		problems = append(problems, apiError{Message: message, Field: &field})
	}

	missingSubject := false
	if len(req.Personalizations) == 0 {
		problem("personalizations", "The personalizations field is required and must have at least one personalization.")
	}
	for i, p := range req.Personalizations {
		if len(p.To) == 0 {
			problem(fmt.Sprintf("personalizations.%d.to", i), "The to array is required for all personalization objects, and must have at least one email object with a valid email address.")
		}
		for j, to := range p.To {
			if !validAddress(to.Email) {
				problems = append(problems, invalidRecipient(i, j))
			}
		}
		if p.Subject == "" && req.Subject == "" && req.TemplateID == "" && !missingSubject {
			missingSubject = true
			problem("subject", "The subject is required. You can get around this requirement if you use a template with a subject defined or if every personalization has a subject defined.")
		}
	}
	from := req.From
	if len(req.Personalizations) > 0 && req.Personalizations[0].From != nil {
		from = req.Personalizations[0].From
	}
	switch {
	case from == nil || from.Email == "":
		problem("from", "The from object must be provided for every email send. It is an object that requires the email parameter, but may also contain a name parameter.")
	case !validAddress(from.Email):
		problem("from.email", "The from email does not contain a valid address.")
	}
	if len(req.Content) == 0 && req.TemplateID == "" {
		problem("content", "Unless a valid template_id is provided, the content parameter is required. There must be at least one defined content block. We typically suggest both text/plain and text/html blocks are included, but only one block is required.")
	}
	if len(req.Content) > 1 && req.Content[0].Type != "text/plain" {
		problem("content", "If present, text/plain and text/html may only be provided in this order.")
	}

	got := Received{
		Subject:                req.Subject,
		Headers:                maps.Clone(req.Headers),
		CustomArgs:             maps.Clone(req.CustomArgs),
		Attachments:            map[string][]byte{},
		AttachmentTypes:        map[string]string{},
		AttachmentDispositions: map[string]string{},
	}
	for i, a := range req.Attachments {
		data, err := base64.StdEncoding.DecodeString(a.Content)
		if err != nil || a.Content == "" {
			problem(fmt.Sprintf("attachments.%d.content", i), "The attachment content must be base64 encoded.")
		}
		if a.Filename == "" {
			problem(fmt.Sprintf("attachments.%d.filename", i), "The attachment filename parameter is required.")
		}
		got.Attachments[a.Filename] = data
		got.AttachmentTypes[a.Filename] = a.Type
		got.AttachmentDispositions[a.Filename] = a.Disposition
	}
	if len(problems) > 0 {
		return Received{}, problems
	}

	first := req.Personalizations[0]
	got.From, got.FromName = from.Email, from.Name
	got.To, got.ToName = first.To[0].Email, first.To[0].Name
	if first.Subject != "" {
		got.Subject = first.Subject
	}
	if got.Headers == nil {
		got.Headers = map[string]string{}
	}
	maps.Copy(got.Headers, first.Headers)
	if got.CustomArgs == nil {
		got.CustomArgs = map[string]string{}
	}
	maps.Copy(got.CustomArgs, first.CustomArgs)
	for _, c := range req.Content {
		switch c.Type {
		case "text/plain":
			got.Text += c.Value
		case "text/html":
			got.HTML += c.Value
		}
	}
	return got, nil
}

// validAddress accepts a bare address only, as SendGrid's email fields do.
func validAddress(s string) bool {
	a, err := netmail.ParseAddress(s)
	return err == nil && a.Address == s
}

// apiError is one entry of SendGrid's error body. Field and Help are
// pointers because SendGrid sends null when it has none.
type apiError struct {
	Message string  `json:"message"`
	Field   *string `json:"field"`
	Help    *string `json:"help"`
}

var badKey = apiError{Message: "The provided authorization grant is invalid, expired, or revoked"}

func invalidRecipient(personalization, to int) apiError {
	field := fmt.Sprintf("personalizations.%d.to.%d.email", personalization, to)
	help := "http://sendgrid.com/docs/API_Reference/Web_API_v3/Mail/errors.html#message.personalizations.to"
	return apiError{Message: "Does not contain a valid address.", Field: &field, Help: &help}
}

func throttled(w http.ResponseWriter, retryAfter time.Duration) {
	h := w.Header()
	if secs := int64(retryAfter / time.Second); secs > 0 {
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	h.Set("X-RateLimit-Limit", "600")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(retryAfter).Unix(), 10))
	writeError(w, http.StatusTooManyRequests, apiError{Message: "too many requests"})
}

func writeError(w http.ResponseWriter, status int, errs ...apiError) {
	body, _ := json.Marshal(struct {
		Errors []apiError `json:"errors"`
	}{errs})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
