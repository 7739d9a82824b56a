// Package twilio sends SMS and WhatsApp messages through Twilio
// Programmable Messaging (the 2010-04-01 Messages resource), with
// twilio-go.
//
// Every Send is exactly one HTTP request, bounded by its context: twilio-go
// builds its requests without one, so each Send gives the library an HTTP
// client of its own whose transport carries the Send's context (and sends
// the request to Config.Endpoint when one is set). Whether to wait, retry or
// move on to another provider is the delivery chain's decision, made from
// the classified error Send returns; Twilio's own error code decides the
// class where it says more than the HTTP status.
//
// A WhatsApp message goes to "whatsapp:" addresses, and one with an
// approved template goes as ContentSid and ContentVariables without a Body:
// Twilio sends a template only that way, and a template that opens a
// conversation must be one (error 63016 otherwise).
package twilio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/twilio/twilio-go/client"
	openapi "github.com/twilio/twilio-go/rest/api/v2010"

	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/provider"
)

// Name is the provider's name in receipts, logs and metrics.
const Name = "twilio"

// DefaultEndpoint is Twilio's REST API, in its default region (US1).
const DefaultEndpoint = "https://api.twilio.com"

// whatsappPrefix marks a WhatsApp address in Twilio's To and From.
const whatsappPrefix = "whatsapp:"

var (
	accountSIDPattern = regexp.MustCompile(`^AC[0-9a-fA-F]{32}$`)
	serviceSIDPattern = regexp.MustCompile(`^MG[0-9a-fA-F]{32}$`)
	// twilio-go refuses credentials with any other character, with an
	// error that looks like Twilio's own; say so at start-up instead.
	tokenPattern = regexp.MustCompile(`^[0-9A-Za-z]+$`)
)

// Config configures the Twilio provider.
type Config struct {
	// AccountSID is the account that sends ("AC" and 32 hex digits).
	// Required.
	AccountSID string
	// AuthToken authenticates every request. Required. It is a secret: it
	// goes only into the request's Authorization header, never into an
	// error or a log line.
	AuthToken string
	// From is the sender: a number in E.164 form ("+15017122661"), a short
	// code or an alphanumeric sender id. For WhatsApp the provider adds
	// the "whatsapp:" prefix itself. One of From and MessagingServiceSID
	// is required; with both, Twilio sends from From and applies the
	// service's features.
	From string
	// MessagingServiceSID ("MG" and 32 hex digits) lets Twilio pick the
	// sender from the service's pool.
	MessagingServiceSID string
	// Endpoint replaces the API's base URL. Defaults to
	// https://api.twilio.com; e.g. https://api.dublin.ie1.twilio.com for
	// another region, an operator's proxy (a path prefix is kept), or a
	// test fake. The request path stays
	// /2010-04-01/Accounts/{AccountSid}/Messages.json under it.
	Endpoint string
	// StatusCallback is the URL Twilio posts each message's status
	// callbacks to — delivered, undelivered, failed, read — so that Herald
	// learns what became of it: <public_url>/v1/inbound/twilio for the
	// platform's account, <public_url>/v1/inbound/twilio/<tenant>/<account>
	// for a tenant's. An absolute http(s) URL. Empty sends none, and Twilio
	// posts to the messaging service's callback, if it has one.
	StatusCallback string
	// HTTPClient sends the requests; its Transport, Timeout, CheckRedirect
	// and Jar are used, and it is not modified. Defaults to a client of
	// the provider's own that follows no redirects, as twilio-go's does,
	// and has no timeout: the context of each Send bounds it.
	HTTPClient *http.Client
}

// Format keeps the auth token out of any log line that prints the config.
func (c Config) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "twilio.Config{AccountSID: %q, AuthToken: [redacted], From: %q, MessagingServiceSID: %q, Endpoint: %q, StatusCallback: %q}",
		c.AccountSID, c.From, c.MessagingServiceSID, c.Endpoint, c.StatusCallback)
}

// LogValue keeps the token out of structured logs, which would otherwise
// print the exported field.
func (c Config) LogValue() slog.Value { return slog.StringValue(fmt.Sprint(c)) }

// Provider sends text messages through Twilio.
type Provider struct {
	accountSID, token  string
	from, service      string
	statusCallback     string
	endpoint           *url.URL // nil: twilio-go's own
	httpClient         http.Client
	transport          http.RoundTripper
	timeout            time.Duration
	redact             *strings.Replacer
	endpointForDisplay string
}

// New checks cfg and returns a provider. It makes no request: rejected
// credentials show up as a permanent error on the first Send.
func New(cfg Config) (*Provider, error) {
	// Credentials are often read from files or environment variables that
	// end in a newline.
	sid := strings.TrimSpace(cfg.AccountSID)
	token := strings.TrimSpace(cfg.AuthToken)
	from := strings.TrimSpace(cfg.From)
	service := strings.TrimSpace(cfg.MessagingServiceSID)
	switch {
	case sid == "":
		return nil, errors.New("twilio: AccountSID is required")
	case !accountSIDPattern.MatchString(sid):
		return nil, fmt.Errorf("twilio: AccountSID %q is not an account SID (AC and 32 hex digits)", redactIn(sid, token))
	case token == "":
		return nil, errors.New("twilio: AuthToken is required")
	case !tokenPattern.MatchString(token):
		// Never quote it.
		return nil, errors.New("twilio: AuthToken must be letters and digits only")
	case from == "" && service == "":
		return nil, errors.New("twilio: From or MessagingServiceSID is required")
	case strings.HasPrefix(from, whatsappPrefix):
		return nil, fmt.Errorf("twilio: From %q must be the bare number: the provider adds %q for WhatsApp messages", redactIn(from, token), whatsappPrefix)
	case service != "" && !serviceSIDPattern.MatchString(service):
		return nil, fmt.Errorf("twilio: MessagingServiceSID %q is not a messaging service SID (MG and 32 hex digits)", redactIn(service, token))
	}

	callback := strings.TrimSpace(cfg.StatusCallback)
	if callback != "" && !absoluteHTTP(callback) {
		return nil, fmt.Errorf("twilio: status_callback %q is not an absolute http(s) URL such as https://herald.example.com/v1/inbound/twilio",
			redactIn(callback, token))
	}

	p := &Provider{
		accountSID: sid, token: token, from: from, service: service, statusCallback: callback,
		redact:             strings.NewReplacer(token, "[redacted]"),
		endpointForDisplay: DefaultEndpoint,
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(strings.TrimRight(cfg.Endpoint, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			// The endpoint is not a secret, but a token pasted into the
			// wrong field would be.
			return nil, fmt.Errorf("twilio: Endpoint %q is not a base URL such as %s", redactIn(cfg.Endpoint, token), DefaultEndpoint)
		}
		p.endpoint, p.endpointForDisplay = u, u.String()
	}

	if cfg.HTTPClient != nil {
		p.httpClient = *cfg.HTTPClient
	} else {
		p.httpClient = http.Client{
			// A transport of its own: http.DefaultTransport's idle
			// connections are shared with the whole process, which may
			// close them under it.
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	p.transport = p.httpClient.Transport
	if p.transport == nil {
		p.transport = http.DefaultTransport
	}
	// The Send's context carries the timeout instead (see Send), since
	// the transport replaces the request's context with it.
	p.timeout, p.httpClient.Timeout = p.httpClient.Timeout, 0
	return p, nil
}

// Format keeps the auth token out of any log line that prints the provider,
// including a struct that holds it.
func (p *Provider) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "twilio.Provider{AccountSID: %q, Endpoint: %q}", p.accountSID, p.endpointForDisplay)
}

// Send posts msg to Twilio's Messages resource. The receipt's message id is
// the message's SID ("SM…"), which Twilio's status callbacks carry as
// MessageSid.
func (p *Provider) Send(ctx context.Context, msg sms.Message) (provider.Receipt, error) {
	params, err := p.params(msg)
	if err != nil {
		return provider.Receipt{}, err
	}
	// Nothing has been sent yet, so an ended context here is a plain
	// transient failure, not an ambiguous one.
	if err := ctx.Err(); err != nil {
		return provider.Receipt{}, fmt.Errorf("not sent: %w", err)
	}
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}

	ans := &answer{}
	api := p.api(ctx, ans)
	// CreateMessage reads the whole answer before it returns, so the
	// context may end when Send does.
	m, err := api.CreateMessage(params)
	if err != nil {
		return provider.Receipt{}, p.failure(err, ans)
	}
	if !ans.success() {
		// twilio-go takes a 3xx for a success; Twilio never answers one,
		// but a proxy in between may.
		return provider.Receipt{}, provider.HTTPError(ans.status, ans.header, p.redact.Replace(string(ans.body)))
	}
	if m.Sid == nil || *m.Sid == "" {
		// Twilio said it accepted the message, so it may well go out;
		// without a SID there is no receipt, and a retry may duplicate it.
		return provider.Receipt{}, &provider.TransientError{
			Err:       fmt.Errorf("HTTP %d without a message sid", ans.status),
			Ambiguous: true,
		}
	}
	return provider.Receipt{MessageID: *m.Sid}, nil
}

// params is msg as a Messages create request.
func (p *Provider) params(msg sms.Message) (*openapi.CreateMessageParams, error) {
	var prefix string
	switch msg.Channel {
	case event.ChannelSMS:
	case event.ChannelWhatsApp:
		prefix = whatsappPrefix
	default:
		return nil, provider.Permanentf("twilio does not send on channel %q", msg.Channel)
	}
	if msg.To == "" {
		return nil, provider.Permanentf("no recipient number")
	}
	if strings.HasPrefix(msg.To, whatsappPrefix) {
		// A Message's number is bare; a prefixed one is a bug upstream
		// that would otherwise go out as "whatsapp:whatsapp:…".
		return nil, provider.Permanentf("recipient %q carries a channel prefix; want a bare E.164 number", msg.To)
	}

	params := (&openapi.CreateMessageParams{}).SetTo(prefix + msg.To)
	if p.from != "" {
		params.SetFrom(prefix + p.from)
	}
	if p.service != "" {
		params.SetMessagingServiceSid(p.service)
	}
	if p.statusCallback != "" {
		params.SetStatusCallback(p.statusCallback)
	}
	if msg.Channel == event.ChannelWhatsApp && msg.Template != nil {
		if msg.Template.ContentSID == "" {
			return nil, provider.Permanentf("WhatsApp template without a content SID")
		}
		params.SetContentSid(msg.Template.ContentSID)
		if len(msg.Template.Variables) > 0 {
			vars, err := contentVariables(msg.Template.Variables)
			if err != nil {
				return nil, provider.Permanent(fmt.Errorf("template variables: %w", err))
			}
			params.SetContentVariables(vars)
		}
		return params, nil
	}
	if msg.Body == "" {
		return nil, provider.Permanentf("empty message body")
	}
	return params.SetBody(msg.Body), nil
}

// contentVariables is the JSON object Twilio's ContentVariables takes:
// {"1":"SKU-42"}. It keeps "<", ">" and "&" as they are, since Twilio puts
// the values into a text message, not HTML.
func contentVariables(vars map[string]string) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(vars); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// api is a twilio-go Messages client for one Send: its requests carry ctx
// and go to the configured endpoint, and what Twilio answered is kept in
// ans for classification.
func (p *Provider) api(ctx context.Context, ans *answer) *openapi.ApiService {
	hc := p.httpClient
	hc.Transport = &sendTransport{ctx: ctx, next: p.transport, endpoint: p.endpoint, ans: ans}
	c := &client.Client{Credentials: client.NewCredentials(p.accountSID, p.token), HTTPClient: &hc}
	c.SetAccountSid(p.accountSID)
	// A handler without Edge and Region: NewRequestHandler would take them
	// from TWILIO_EDGE and TWILIO_REGION, behind the configuration's back.
	return openapi.NewApiService(&client.RequestHandler{Client: c})
}

// failure classifies an error from twilio-go, using what Twilio answered.
func (p *Provider) failure(err error, ans *answer) error {
	if ans.status == 0 {
		// No answer at all: the request may or may not have arrived.
		return provider.NetworkError(err)
	}
	var rest *client.TwilioRestError
	if errors.As(err, &rest) && rest.Code != 0 {
		return classify(&Error{
			Status:   ans.status,
			Code:     rest.Code,
			Message:  p.redact.Replace(rest.Message),
			MoreInfo: rest.MoreInfo,
		}, ans.header)
	}
	if ans.success() {
		// Twilio accepted the message but its answer could not be read
		// (cut off, or not the JSON it should be): it may go out.
		return &provider.TransientError{
			Err:       fmt.Errorf("HTTP %d, reading the answer: %w", ans.status, err),
			Ambiguous: true,
		}
	}
	// An answer in another shape, such as a proxy's HTML error page.
	words := p.redact.Replace(string(ans.body))
	if ans.readErr != nil {
		words += " (reading the answer: " + ans.readErr.Error() + ")"
	}
	return provider.HTTPError(ans.status, ans.header, words)
}

// absoluteHTTP reports whether s is an absolute http(s) URL without
// credentials: Twilio calls it from the internet, and a password in it
// would show wherever the config is printed (Herald verifies Twilio's
// signature instead).
func absoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// redactIn replaces secret in s, for config values quoted in errors, where
// a token pasted into the wrong field would otherwise show.
func redactIn(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}
