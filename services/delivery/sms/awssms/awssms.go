// Package awssms is the Amazon End User Messaging SMS provider (the API
// once called Amazon Pinpoint SMS and Voice v2, "pinpointsmsvoicev2").
//
// It sends SMS only: AWS's WhatsApp service is another API, so a WhatsApp
// message is refused permanently without a request. Each Send is exactly
// one SendTextMessage request: the SDK's own retries are off, because
// retrying is the business of Herald's provider chain and redelivery, which
// know about fallback providers, Retry-After and ambiguous sends.
//
// Errors are classified for the chain by the API's own exceptions: a
// refusal of this message or of this account's set-up (validation, opt-out,
// access, a missing origination identity or configuration set) is
// permanent; throttling, an exhausted quota or spend limit, and server
// faults are transient, so the chain falls back to the next provider; a
// timeout after the request left is ambiguous.
package awssms

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2/types"

	"github.com/heraldhq/herald/services/delivery/awsapi"
	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/provider"
)

// Name is the provider's name in receipts, logs and metrics.
const Name = "awssms"

// Context keys under which the API logs a message to the configuration
// set's event destinations (delivery receipts, failures), so its events can
// be traced back to a notification.
const (
	ContextNotificationID = "herald_notification_id"
	ContextDedupeKey      = "herald_dedupe_key"
	ContextTenant         = "herald_tenant"
)

// maxContextValue is the API's limit on a Context value. It counts
// characters; counting bytes here keeps within it however they are counted.
const maxContextValue = 800

// Message types the API takes.
const (
	Transactional = string(types.MessageTypeTransactional)
	Promotional   = string(types.MessageTypePromotional)
)

// destinationPattern is the API's own pattern for DestinationPhoneNumber.
var destinationPattern = regexp.MustCompile(`^\+?[1-9][0-9]{1,18}$`)

// Config configures the provider.
type Config struct {
	// Region is the AWS region of the API endpoint, e.g. "eu-west-1".
	// Required.
	Region string
	// Endpoint overrides the API endpoint, e.g. http://127.0.0.1:8006 for
	// awssmstest's fake.
	Endpoint string
	// AccessKeyID, SecretAccessKey and SessionToken are static credentials
	// to sign the requests with; SessionToken only for temporary ones.
	// Empty means the standard AWS chain: environment, shared config and
	// credentials files, container and instance roles.
	AccessKeyID, SecretAccessKey, SessionToken string
	// OriginationIdentity is what the message is sent from: a phone number,
	// sender id or pool, by id or ARN (an ARN for a shared one). Defaults to
	// none: AWS picks one of the account's that suits the destination.
	OriginationIdentity string
	// ConfigurationSetName is the configuration set, by name or ARN, whose
	// event destinations receive the message's events. Defaults to none
	// (the account's default, if any).
	ConfigurationSetName string
	// MessageType is Transactional or Promotional. Defaults to
	// Transactional: Herald's notifications are the user's own business,
	// and some countries deliver promotional messages late or not at all.
	MessageType string
	// HTTPClient sends the requests. Nil means the SDK's default client. A
	// client given here is used as is: a CA bundle from the AWS
	// configuration (AWS_CA_BUNDLE) is not added to it.
	HTTPClient *http.Client
}

var _ sms.Provider = (*Provider)(nil)

// Provider sends SMS through Amazon End User Messaging SMS.
type Provider struct {
	client              *pinpointsmsvoicev2.Client
	originationIdentity string
	configurationSet    string
	messageType         types.MessageType
}

// New returns a provider for cfg. It loads the AWS configuration (shared
// files, environment) but does not contact AWS: credentials are resolved on
// the first Send.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if strings.TrimSpace(cfg.Region) == "" {
		return nil, errors.New("awssms: region is required")
	}
	messageType, err := parseMessageType(cfg.MessageType)
	if err != nil {
		return nil, err
	}
	creds, err := staticCredentials(cfg)
	if err != nil {
		return nil, err
	}
	awsCfg, err := awsapi.Config(ctx, awsapi.Settings{Region: cfg.Region, Endpoint: cfg.Endpoint,
		Credentials: creds, HTTPClient: cfg.HTTPClient})
	if err != nil {
		return nil, fmt.Errorf("awssms: %w", err)
	}
	client := pinpointsmsvoicev2.NewFromConfig(awsCfg)
	return &Provider{
		client:              client,
		originationIdentity: cfg.OriginationIdentity,
		configurationSet:    cfg.ConfigurationSetName,
		messageType:         messageType,
	}, nil
}

// staticCredentials is cfg's static credentials, or nil for the standard
// chain. Half a key pair is refused rather than left to the chain: it would
// quietly sign as whoever the environment says.
func staticCredentials(cfg Config) (aws.CredentialsProvider, error) {
	if cfg.AccessKeyID == "" && cfg.SecretAccessKey == "" && cfg.SessionToken == "" {
		return nil, nil
	}
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		return nil, errors.New("awssms: static credentials need both an access key id and a secret access key")
	}
	return aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(
		cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)), nil
}

func parseMessageType(s string) (types.MessageType, error) {
	switch t := types.MessageType(strings.ToUpper(strings.TrimSpace(s))); t {
	case "":
		return types.MessageTypeTransactional, nil
	case types.MessageTypeTransactional, types.MessageTypePromotional:
		return t, nil
	}
	return "", fmt.Errorf("awssms: message type %q: want %s or %s", s, Transactional, Promotional)
}

// Send hands msg to the API. The receipt's message id is AWS's.
func (p *Provider) Send(ctx context.Context, msg sms.Message) (provider.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return provider.Receipt{}, err
	}
	if msg.Channel != event.ChannelSMS {
		return provider.Receipt{}, provider.Permanentf("amazon sms does not send %s", channelName(msg.Channel))
	}
	// The API would refuse it too, but only after a round trip that counts
	// against the sending rate; this is the API's own pattern, so nothing
	// it would take is refused here.
	if !destinationPattern.MatchString(msg.To) {
		return provider.Receipt{}, provider.Permanentf("recipient %q: not a phone number in E.164 form", msg.To)
	}
	out, err := p.client.SendTextMessage(ctx, p.input(msg))
	if err != nil {
		return provider.Receipt{}, classify(err)
	}
	if out.MessageId == nil || *out.MessageId == "" {
		// AWS said yes but gave nothing to trace the message by. It may well
		// be on its way, so a resend could duplicate it.
		return provider.Receipt{}, &provider.TransientError{
			Err:       errors.New("amazon sms answered success without a MessageId"),
			Ambiguous: true,
		}
	}
	return provider.Receipt{MessageID: *out.MessageId}, nil
}

func (p *Provider) input(msg sms.Message) *pinpointsmsvoicev2.SendTextMessageInput {
	in := &pinpointsmsvoicev2.SendTextMessageInput{
		DestinationPhoneNumber: aws.String(msg.To),
		MessageBody:            aws.String(msg.Body),
		MessageType:            p.messageType,
		Context:                messageContext(msg),
	}
	if p.originationIdentity != "" {
		in.OriginationIdentity = aws.String(p.originationIdentity)
	}
	if p.configurationSet != "" {
		in.ConfigurationSetName = aws.String(p.configurationSet)
	}
	return in
}

func channelName(c event.Channel) string {
	if c == "" {
		return "a message without a channel"
	}
	return string(c)
}

// messageContext labels the message for the configuration set's events. A
// value with nothing left to say is left out rather than risk the API
// refusing it — which would refuse every message of the tenant.
func messageContext(msg sms.Message) map[string]string {
	out := map[string]string{}
	for _, c := range []struct{ key, value string }{
		{ContextNotificationID, msg.ID},
		{ContextDedupeKey, msg.DedupeKey},
		{ContextTenant, msg.Tenant},
	} {
		if v := contextValue(c.value); v != "" {
			out[c.key] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// contextValue makes s an acceptable Context value: at most 800 characters,
// none of them invalid UTF-8, not starting or ending with white space.
func contextValue(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxContextValue {
		cut := maxContextValue
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return strings.TrimFunc(s, unicode.IsSpace)
}

// classify turns an SDK error into Herald's taxonomy. The text is built from
// the status, the API's exception, message and reason, and the request id —
// never from the signed request, so no credential can end up in it.
func classify(err error) error {
	a, failure := awsapi.Split(err, "amazon sms")
	if failure != nil {
		return failure
	}
	status, header := a.Status, a.Header
	said := a.ErrorCode() + ": " + a.ErrorMessage() + details(err) + awsapi.RequestID(err)
	words := fmt.Errorf("HTTP %d: %s", status, said)
	switch a.ErrorCode() {
	case "ValidationException", "ConflictException", "AccessDeniedException", "ResourceNotFoundException":
		// All come as 400s: a refusal of this message (an invalid or
		// opted-out number, a blocked country) or of this account's set-up
		// (permissions, an origination identity or configuration set that
		// does not exist), which no retry with it can change.
		return provider.Permanent(words)
	case "ThrottlingException", "ServiceQuotaExceededException":
		// 400s too, but a rate or a quota (a monthly spend limit), not a
		// verdict: another provider, or a later try, may get through.
		return &provider.TransientError{Err: words, RetryAfter: provider.ParseRetryAfter(header, time.Now())}
	case "InternalServerException":
		return &provider.TransientError{Err: words}
	}
	// Errors common to every AWS API (UnrecognizedClientException,
	// ServiceUnavailable, …): their status says what they mean.
	return provider.HTTPError(status, header, said)
}

// details is what the API's exceptions say beyond their message: the
// reason (DESTINATION_PHONE_NUMBER_OPTED_OUT, MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT…),
// the fields a validation failed on, the resource that was not found.
func details(err error) string {
	var parts []string
	var (
		validation *types.ValidationException
		conflict   *types.ConflictException
		denied     *types.AccessDeniedException
		notFound   *types.ResourceNotFoundException
		quota      *types.ServiceQuotaExceededException
	)
	switch {
	case errors.As(err, &validation):
		parts = appendReason(parts, string(validation.Reason))
		for _, f := range validation.Fields {
			parts = append(parts, "field "+aws.ToString(f.Name)+": "+aws.ToString(f.Message))
		}
	case errors.As(err, &conflict):
		parts = appendReason(parts, string(conflict.Reason))
		parts = appendResource(parts, string(conflict.ResourceType), aws.ToString(conflict.ResourceId))
	case errors.As(err, &denied):
		parts = appendReason(parts, string(denied.Reason))
	case errors.As(err, &notFound):
		parts = appendResource(parts, string(notFound.ResourceType), aws.ToString(notFound.ResourceId))
	case errors.As(err, &quota):
		parts = appendReason(parts, string(quota.Reason))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func appendReason(parts []string, reason string) []string {
	if reason == "" {
		return parts
	}
	return append(parts, "reason "+reason)
}

func appendResource(parts []string, typ, id string) []string {
	if typ == "" && id == "" {
		return parts
	}
	return append(parts, strings.TrimSpace("resource "+typ+" "+id))
}
