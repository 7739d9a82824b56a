// Package ses is the Amazon SES (API v2) email provider.
//
// Messages go out as raw MIME, rendered by email.Message, so attachments and
// Herald's Message-ID reach SES exactly as composed. Each Send is exactly one
// HTTP request: the SDK's own retries are off, because retrying is the
// business of Herald's provider chain and redelivery, which know about
// fallback providers, Retry-After and ambiguous sends.
//
// Errors are classified for the chain: a refusal of this message is
// permanent; throttling, server faults and account-level states (suspended,
// paused, unverified MAIL FROM domain) are transient, so the chain falls back
// to the next provider; a timeout after the request left is ambiguous.
package ses

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	netmail "net/mail"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/heraldhq/herald/services/delivery/awsapi"
	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/provider"
)

// Name is the provider's name in receipts, logs and metrics.
const Name = "ses"

// Tag names under which SES reports a message in its events (bounces,
// complaints, deliveries), so they can be traced back to a notification.
const (
	TagNotificationID = "herald_notification_id"
	TagTenant         = "herald_tenant"
)

// maxTagValue is SES's limit on a message tag value.
const maxTagValue = 256

// Config configures the SES provider.
type Config struct {
	// Region is the AWS region of the SES endpoint, e.g. "eu-west-1".
	// Required.
	Region string
	// Endpoint overrides the SES endpoint, e.g. http://127.0.0.1:8005 for a
	// local emulator or sestest's fake.
	Endpoint string
	// Credentials sign the requests. Nil means the standard AWS chain:
	// environment, shared config and credentials files, container and
	// instance roles.
	Credentials aws.CredentialsProvider
	// HTTPClient sends the requests to SES. Nil means the SDK's default
	// client. A client given here is used as is: a CA bundle from the AWS
	// configuration (AWS_CA_BUNDLE) is not added to it.
	HTTPClient *http.Client
}

// Provider sends email through Amazon SES.
type Provider struct {
	client *sesv2.Client
}

// New returns a provider for cfg. It loads the AWS configuration (shared
// files, environment) but does not contact AWS: credentials are resolved on
// the first Send.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if strings.TrimSpace(cfg.Region) == "" {
		return nil, errors.New("ses: region is required")
	}
	awsCfg, err := awsapi.Config(ctx, awsapi.Settings{Region: cfg.Region, Endpoint: cfg.Endpoint,
		Credentials: cfg.Credentials, HTTPClient: cfg.HTTPClient})
	if err != nil {
		return nil, fmt.Errorf("ses: %w", err)
	}
	client := sesv2.NewFromConfig(awsCfg)
	return &Provider{client: client}, nil
}

// Send hands msg to SES as raw MIME. The receipt's message id is SES's.
func (p *Provider) Send(ctx context.Context, msg email.Message) (provider.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return provider.Receipt{}, err
	}
	// SES would refuse it too, but only after a round trip and with words
	// that vary; refusing here keeps an invalid address from costing a
	// request or counting against the sending rate.
	if _, err := netmail.ParseAddress(msg.To); err != nil {
		return provider.Receipt{}, provider.Permanentf("recipient %q: %v", msg.To, err)
	}
	raw, err := msg.MIME()
	if err != nil {
		return provider.Receipt{}, err
	}
	out, err := p.client.SendEmail(ctx, &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(msg.From),
		Destination:      &types.Destination{ToAddresses: []string{msg.To}},
		Content:          &types.EmailContent{Raw: &types.RawMessage{Data: raw}},
		EmailTags:        tags(msg),
	})
	if err != nil {
		return provider.Receipt{}, classify(err)
	}
	if out.MessageId == nil || *out.MessageId == "" {
		// SES said yes but gave nothing to trace the message by. It may well
		// be on its way, so a resend could duplicate it.
		return provider.Receipt{}, &provider.TransientError{
			Err:       errors.New("SES answered success without a MessageId"),
			Ambiguous: true,
		}
	}
	return provider.Receipt{MessageID: *out.MessageId}, nil
}

// tags labels the message for SES's event stream. A tag with nothing left
// to say is left out rather than risk SES refusing an empty value — which
// would refuse every message of the tenant.
func tags(msg email.Message) []types.MessageTag {
	var out []types.MessageTag
	for _, t := range []struct{ name, value string }{
		{TagNotificationID, msg.ID},
		{TagTenant, msg.Tenant},
	} {
		if v := tagValue(t.value); v != "" {
			out = append(out, types.MessageTag{Name: aws.String(t.name), Value: aws.String(v)})
		}
	}
	return out
}

// tagValue makes s an acceptable SES tag value. SES refuses the whole
// message over a bad tag, so a tenant or id with an unexpected character
// must not make every send fail.
func tagValue(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() == maxTagValue {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9',
			r == '_', r == '.', r == '@', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// classify turns an SDK error into Herald's taxonomy. The text is built from
// the status, SES's error code and message, and the request id — never from
// the signed request, so no credential can end up in it.
func classify(err error) error {
	a, failure := awsapi.Split(err, "SES")
	if failure != nil {
		return failure
	}
	words := a.ErrorCode() + ": " + a.ErrorMessage() + awsapi.RequestID(err)
	switch a.ErrorCode() {
	case "AccountSuspendedException", "SendingPausedException", "MailFromDomainNotVerifiedException":
		// SES answers 400, but the refusal is of the sending account, not of
		// this message: another provider can still deliver it.
		return &provider.TransientError{Err: fmt.Errorf("SES account cannot send: HTTP %d: %s", a.Status, words)}
	case "TooManyRequestsException", "LimitExceededException":
		// LimitExceededException comes as a 400; it is a rate, not a verdict.
		return &provider.TransientError{
			Err:        fmt.Errorf("HTTP %d: %s", a.Status, words),
			RetryAfter: provider.ParseRetryAfter(a.Header, time.Now()),
		}
	}
	return provider.HTTPError(a.Status, a.Header, words)
}
