// Package twiliotest is a fake Twilio Programmable Messaging API for tests.
//
// It speaks Twilio's wire format — HTTP basic authentication with the
// account SID and auth token, a form-encoded POST to
// /2010-04-01/Accounts/{AccountSid}/Messages.json, 201 with the Message
// resource as JSON, errors as Twilio's {code, message, more_info, status} —
// so twilio-go, and Herald's provider built on it, run against it
// unchanged. It checks a request as Twilio does (To, a sender, a body or a
// content template, WhatsApp addresses on both ends, a StatusCallback URL),
// refuses Twilio's magic test numbers as Twilio does for test credentials,
// and takes injected faults: the next calls failing, a number that is
// always refused, a WhatsApp number whose session window is closed, a
// delay.
package twiliotest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/heraldhq/herald/services/delivery/sms/smstest"
	"github.com/heraldhq/herald/shared/event"
)

// whatsappPrefix marks a WhatsApp address in To and From.
const whatsappPrefix = "whatsapp:"

// maxBody is Twilio's limit on a message body, in characters.
const maxBody = 1600

// maxCallback is Twilio's limit on a StatusCallback URL, in characters.
const maxCallback = 4000

var (
	e164       = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	serviceSID = regexp.MustCompile(`^MG[0-9a-fA-F]{32}$`)
	contentSID = regexp.MustCompile(`^HX[0-9a-fA-F]{32}$`)
	// messagesPath is the Messages resource; the account SID is checked
	// against the credentials.
	messagesPath = regexp.MustCompile(`^/2010-04-01/Accounts/([^/]+)/Messages\.json$`)
)

// Failure is an answer the fake gives instead of accepting a message.
type Failure struct {
	// Status is the HTTP status.
	Status int
	// Code and Message are Twilio's error code and words; "{To}" in
	// Message stands for the request's To.
	Code    int
	Message string
	// RetryAfter, when a second or more, is sent as Retry-After in whole
	// seconds.
	RetryAfter time.Duration
	// RawBody, when set, is the whole answer instead of Twilio's error
	// JSON, as from a proxy or load balancer in between. With a 2xx
	// Status the fake accepts and records the message, then answers
	// RawBody: an acceptance the client cannot read.
	RawBody string
}

// Twilio's refusals, with its codes and words.
var (
	InvalidNumber = Failure{Status: 400, Code: 21211,
		Message: "The 'To' number {To} is not a valid phone number."}
	NotMobile = Failure{Status: 400, Code: 21614,
		Message: "To number: {To}, is not a mobile number"}
	Unsubscribed = Failure{Status: 400, Code: 21610,
		Message: "Attempt to send to unsubscribed recipient"}
	RegionPermission = Failure{Status: 400, Code: 21408,
		Message: "Permission to send an SMS has not been enabled for the region indicated by the 'To' number: {To}"}
	CannotRoute = Failure{Status: 400, Code: 21612,
		Message: "The 'To' phone number: {To}, is not currently reachable using the 'From' phone number via SMS."}
	OutsideSessionWindow = Failure{Status: 400, Code: 63016,
		Message: "Failed to send freeform message because you are outside the allowed window. If you are using WhatsApp, please use a Message Template."}
	Unauthenticated = Failure{Status: 401, Code: 20003, Message: "Authenticate"}
	ServerError     = Failure{Status: 500, Code: 20500, Message: "An internal server error has occurred"}
	// BadGateway is a load balancer's answer, not Twilio's JSON.
	BadGateway = Failure{Status: 502,
		RawBody: "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"}
	// AcceptedWithoutSID accepts the message but answers without its SID.
	AcceptedWithoutSID = Failure{Status: 201, RawBody: `{"status": "queued"}`}
)

// TooManyRequests is Twilio's 429 for an account over its API concurrency.
func TooManyRequests(retryAfter time.Duration) Failure {
	return Failure{Status: 429, Code: 20429, Message: "Too Many Requests", RetryAfter: retryAfter}
}

// magicNumbers are the To numbers Twilio refuses when the request carries
// test credentials (https://www.twilio.com/docs/iam/test-credentials); the
// fake refuses them always, so that tests need no rules of their own.
var magicNumbers = map[string]Failure{
	"+15005550001": InvalidNumber,
	"+15005550002": CannotRoute,
	"+15005550003": RegionPermission,
	"+15005550004": Unsubscribed,
	"+15005550009": NotMobile,
}

// Message is a message the fake accepted, as it arrived.
type Message struct {
	// SID is the message SID the fake answered with ("SM…").
	SID string
	// Channel is event.ChannelWhatsApp when To is a "whatsapp:" address,
	// event.ChannelSMS otherwise.
	Channel event.Channel
	// To and From are as sent, "whatsapp:" prefix included; From is empty
	// when only MessagingServiceSID was.
	To, From            string
	MessagingServiceSID string
	Body                string
	ContentSID          string
	// ContentVariables is the decoded ContentVariables JSON.
	ContentVariables map[string]string
	// StatusCallback is where Twilio would post the message's status
	// callbacks; empty when none was sent.
	StatusCallback string
	// NumSegments is what Twilio would bill: GSM-7 or UCS-2 segments.
	NumSegments int
}

// Normalized is the message as smstest compares it.
func (m Message) Normalized() smstest.Received {
	return smstest.Received{
		Channel:    m.Channel,
		To:         strings.TrimPrefix(m.To, whatsappPrefix),
		Body:       m.Body,
		ContentSID: m.ContentSID,
		Variables:  maps.Clone(m.ContentVariables),
	}
}

// Server is a fake Twilio API. It is safe for concurrent use.
type Server struct {
	srv                   *httptest.Server
	accountSID, authToken string
	// closing ends every pending delay, so that closing never waits.
	closing chan struct{}

	mu       sync.Mutex
	calls    int
	failNext []Failure
	refuse   map[string]Failure
	closed   map[string]bool // WhatsApp numbers without a session
	delay    time.Duration
	received []Message
}

// New starts a fake for the account accountSID with authToken, and closes
// it when t ends.
func New(t testing.TB, accountSID, authToken string) *Server {
	s := &Server{
		accountSID: accountSID, authToken: authToken,
		closing: make(chan struct{}),
		refuse:  map[string]Failure{},
		closed:  map[string]bool{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.closing)
		s.srv.Close()
	})
	return s
}

// URL is the base URL to give the provider as its endpoint.
func (s *Server) URL() string { return s.srv.URL }

// FailNext makes the next n calls, whatever they ask, answer f.
func (s *Server) FailNext(n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failNext = append(s.failNext, f)
	}
}

// Refuse makes every message to the address to, as sent ("+34600111222"
// or "whatsapp:+34600111222"), answer f once the request is otherwise
// valid.
func (s *Server) Refuse(to string, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse[to] = f
}

// CloseSession closes the WhatsApp session window of number (bare E.164):
// free-form WhatsApp messages to it answer 63016, templates go through.
func (s *Server) CloseSession(number string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed[number] = true
}

// Delay makes every call from now on wait d before it is answered. A
// client that gives up first gets no answer, and nothing is recorded;
// closing the server cuts the wait short.
func (s *Server) Delay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Calls is how many requests the server has received, whatever became of
// them.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Received returns the accepted messages, in the order they were accepted.
func (s *Server) Received() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.received...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls++
	delay := s.delay
	var fault *Failure
	if len(s.failNext) > 0 {
		fault = &s.failNext[0]
		s.failNext = s.failNext[1:]
	}
	s.mu.Unlock()

	s.wait(r, delay)
	if fault != nil && !accepts(*fault) {
		writeFailure(w, *fault, r.PostFormValue("To"))
		return
	}
	if fail, ok := s.check(r); !ok {
		writeFailure(w, fail, r.PostFormValue("To"))
		return
	}
	msg, fail, ok := s.message(r)
	if !ok {
		writeFailure(w, fail, msg.To)
		return
	}

	s.mu.Lock()
	s.received = append(s.received, msg)
	s.mu.Unlock()
	if fault != nil {
		writeRaw(w, *fault)
		return
	}
	writeJSON(w, http.StatusCreated, s.resource(msg))
}

// wait holds the answer for d, or drops the connection without one if the
// client leaves or the server closes first.
func (s *Server) wait(r *http.Request, d time.Duration) {
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-r.Context().Done():
		// ErrAbortHandler drops the connection without an answer or a log
		// line; returning would send an empty 200.
		panic(http.ErrAbortHandler)
	case <-s.closing:
		panic(http.ErrAbortHandler)
	}
}

// check is Twilio's routing and authentication.
func (s *Server) check(r *http.Request) (Failure, bool) {
	m := messagesPath.FindStringSubmatch(r.URL.Path)
	if m == nil || r.Method != http.MethodPost {
		return Failure{Status: 404, Code: 20404,
			Message: fmt.Sprintf("The requested resource %s was not found", r.URL.Path)}, false
	}
	user, pass, ok := r.BasicAuth()
	if !ok || user != s.accountSID || pass != s.authToken || m[1] != s.accountSID {
		return Unauthenticated, false
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return Failure{Status: 400, Code: 20001, Message: "Content-Type must be application/x-www-form-urlencoded"}, false
	}
	return Failure{}, true
}

// message reads and checks the request's parameters as Twilio does.
func (s *Server) message(r *http.Request) (Message, Failure, bool) {
	if err := r.ParseForm(); err != nil {
		return Message{}, Failure{Status: 400, Code: 20001, Message: "Could not parse the request body"}, false
	}
	f := r.PostForm
	msg := Message{
		To: f.Get("To"), From: f.Get("From"), MessagingServiceSID: f.Get("MessagingServiceSid"),
		Body: f.Get("Body"), ContentSID: f.Get("ContentSid"), Channel: event.ChannelSMS,
		StatusCallback: f.Get("StatusCallback"),
	}
	bad := func(code int, words string) (Message, Failure, bool) {
		return msg, Failure{Status: 400, Code: code, Message: words}, false
	}
	to, whatsapp := strings.CutPrefix(msg.To, whatsappPrefix)
	if whatsapp {
		msg.Channel = event.ChannelWhatsApp
	}
	switch {
	case msg.To == "":
		return bad(21604, "A 'To' phone number is required.")
	case msg.From == "" && msg.MessagingServiceSID == "":
		return bad(21603, "A 'From' or 'MessagingServiceSid' parameter is required to send a message.")
	case msg.MessagingServiceSID != "" && !serviceSID.MatchString(msg.MessagingServiceSID):
		return bad(21701, fmt.Sprintf("The Messaging Service Sid %s is invalid.", msg.MessagingServiceSID))
	case msg.From != "" && strings.HasPrefix(msg.From, whatsappPrefix) != whatsapp:
		return bad(21910, "Invalid From and To pair. From and To should be of the same channel")
	case msg.Body == "" && msg.ContentSID == "" && f.Get("MediaUrl") == "":
		return bad(21602, "Message body is required.")
	case utf8.RuneCountInString(msg.Body) > maxBody:
		return bad(21617, "The concatenated message body exceeds the 1600 character limit.")
	case msg.ContentSID != "" && !contentSID.MatchString(msg.ContentSID):
		return bad(21655, "The ContentSid is Invalid.")
	case msg.StatusCallback != "" && !callbackURL(msg.StatusCallback):
		return bad(21609, fmt.Sprintf("The StatusCallback URL %s is not a valid URL.", msg.StatusCallback))
	case !e164.MatchString(to):
		return bad(21211, fmt.Sprintf("The 'To' number %s is not a valid phone number.", msg.To))
	}
	if v := f.Get("ContentVariables"); v != "" {
		if err := json.Unmarshal([]byte(v), &msg.ContentVariables); err != nil {
			return bad(21656, "The ContentVariables Parameter is invalid.")
		}
	}

	s.mu.Lock()
	rule, refused := s.refuse[msg.To]
	closed := whatsapp && s.closed[to]
	s.mu.Unlock()
	if magic, ok := magicNumbers[msg.To]; ok && !refused {
		rule, refused = magic, true
	}
	switch {
	case refused:
		return msg, rule, false
	case closed && msg.ContentSID == "":
		return msg, OutsideSessionWindow, false
	}
	msg.SID = "SM" + randomHex()
	msg.NumSegments = segments(msg.Body)
	return msg, Failure{}, true
}

// resource is the Message resource Twilio answers a create with.
type resource struct {
	AccountSID          string            `json:"account_sid"`
	APIVersion          string            `json:"api_version"`
	Body                string            `json:"body"`
	DateCreated         string            `json:"date_created"`
	DateSent            *string           `json:"date_sent"`
	DateUpdated         string            `json:"date_updated"`
	Direction           string            `json:"direction"`
	ErrorCode           *int              `json:"error_code"`
	ErrorMessage        *string           `json:"error_message"`
	From                *string           `json:"from"`
	MessagingServiceSID *string           `json:"messaging_service_sid"`
	NumMedia            string            `json:"num_media"`
	NumSegments         string            `json:"num_segments"`
	Price               *string           `json:"price"`
	PriceUnit           string            `json:"price_unit"`
	SID                 string            `json:"sid"`
	Status              string            `json:"status"`
	SubresourceURIs     map[string]string `json:"subresource_uris"`
	To                  string            `json:"to"`
	URI                 string            `json:"uri"`
}

func (s *Server) resource(msg Message) resource {
	now := time.Now().UTC().Format(time.RFC1123Z)
	base := "/2010-04-01/Accounts/" + s.accountSID + "/Messages/" + msg.SID
	res := resource{
		AccountSID: s.accountSID, APIVersion: "2010-04-01", Body: msg.Body,
		DateCreated: now, DateUpdated: now, Direction: "outbound-api",
		NumMedia: "0", NumSegments: strconv.Itoa(msg.NumSegments), PriceUnit: "USD",
		SID: msg.SID, Status: "queued", To: msg.To, URI: base + ".json",
		SubresourceURIs: map[string]string{"media": base + "/Media.json"},
	}
	if msg.From != "" {
		res.From = &msg.From
	} else {
		// Twilio picks a sender from the service's pool later, and counts
		// segments once it has.
		res.Status, res.NumSegments = "accepted", "0"
	}
	if msg.MessagingServiceSID != "" {
		res.MessagingServiceSID = &msg.MessagingServiceSID
	}
	return res
}

// callbackURL reports whether s is a StatusCallback Twilio takes: a fully
// qualified http(s) URL of at most 4000 characters.
func callbackURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && len(s) <= maxCallback
}

// accepts reports whether f accepts the message before answering.
func accepts(f Failure) bool { return f.Status >= 200 && f.Status < 300 }

func writeFailure(w http.ResponseWriter, f Failure, to string) {
	if secs := int64(f.RetryAfter / time.Second); secs > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	if f.RawBody != "" {
		writeRaw(w, f)
		return
	}
	writeJSON(w, f.Status, struct {
		Code     int    `json:"code"`
		Message  string `json:"message"`
		MoreInfo string `json:"more_info"`
		Status   int    `json:"status"`
	}{f.Code, strings.ReplaceAll(f.Message, "{To}", to), fmt.Sprintf("https://www.twilio.com/docs/errors/%d", f.Code), f.Status})
}

func writeRaw(w http.ResponseWriter, f Failure) {
	if strings.HasPrefix(f.RawBody, "{") {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/html")
	}
	w.WriteHeader(f.Status)
	_, _ = w.Write([]byte(f.RawBody))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// The GSM-7 alphabet: its basic set takes one septet a character, its
// extension two (an escape and the character).
const (
	gsmBasic = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
		"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
	gsmExtension = "\f^{}\\[~]|€"
)

// segments is how many SMS segments body takes: up to 160 GSM-7 septets in
// one, 153 a segment when split; otherwise UCS-2, up to 70 UTF-16 units in
// one, 67 a segment when split.
func segments(body string) int {
	septets := 0
	for _, r := range body {
		switch {
		case strings.ContainsRune(gsmBasic, r):
			septets++
		case strings.ContainsRune(gsmExtension, r):
			septets += 2
		default:
			return split(len(utf16.Encode([]rune(body))), 70, 67)
		}
	}
	return split(septets, 160, 153)
}

func split(n, single, part int) int {
	if n <= single {
		return 1
	}
	return (n + part - 1) / part
}
