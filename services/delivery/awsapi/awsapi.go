// Package awsapi is what Herald's AWS providers (SES for email, End User
// Messaging for SMS) share: one way to configure an SDK client, and the
// first half of classifying its errors — network failures, unreadable
// answers — leaving each API's own error codes to its provider.
package awsapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/heraldhq/herald/shared/provider"
)

// Settings say how to reach an AWS API.
type Settings struct {
	Region string
	// Endpoint replaces the API's base URL (an emulator, a test server).
	Endpoint string
	// Credentials default to the standard chain: environment, shared
	// files, instance or pod role.
	Credentials aws.CredentialsProvider
	// HTTPClient defaults to the SDK's.
	HTTPClient *http.Client
}

// Config loads the shared AWS configuration for s, with the SDK's own
// retries off.
func Config(ctx context.Context, s Settings) (aws.Config, error) {
	opts := []func(*config.LoadOptions) error{config.WithRegion(s.Region)}
	if s.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(s.Credentials))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading AWS configuration: %w", err)
	}
	if s.Endpoint != "" {
		cfg.BaseEndpoint = aws.String(s.Endpoint)
	}
	// Set here, not given to LoadDefaultConfig, which refuses any client
	// but its own when a CA bundle is configured (AWS_CA_BUNDLE).
	if s.HTTPClient != nil {
		cfg.HTTPClient = s.HTTPClient
	}
	// Set after the shared config is loaded, so that AWS_MAX_ATTEMPTS or a
	// profile's retry settings cannot bring SDK retries back: they would
	// multiply Herald's own and, under load, drain the SDK's retry quota
	// into errors of its own making.
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	cfg.RetryMaxAttempts = 1
	return cfg, nil
}

// Answer is an API's refusal: its error, with the HTTP status and headers
// it came with.
type Answer struct {
	smithy.APIError
	Status int
	Header http.Header
}

// Split tells an API's refusal, which its provider classifies by its codes,
// from every other failure, classified here: no answer at all (a network
// failure, ambiguous if the request may have arrived), an answer without
// an API error (by its status), or an acceptance that could not be read
// (ambiguous: the message may be on its way). service names the API in
// errors.
func Split(err error, service string) (Answer, error) {
	var respErr *smithyhttp.ResponseError
	var sendErr *smithyhttp.RequestSendError
	var canceled *smithy.CanceledError
	if !errors.As(err, &respErr) || respErr.Response == nil || respErr.HTTPStatusCode() == 0 ||
		errors.As(err, &sendErr) || errors.As(err, &canceled) {
		return Answer{}, provider.NetworkError(err)
	}
	a := Answer{Status: respErr.HTTPStatusCode(), Header: respErr.Response.Header}
	if !errors.As(err, &a.APIError) {
		if a.Status >= 200 && a.Status < 300 {
			return Answer{}, &provider.TransientError{Err: fmt.Errorf("reading %s's answer: %w", service, respErr.Err), Ambiguous: true}
		}
		return Answer{}, provider.HTTPError(a.Status, a.Header, respErr.Err.Error()+RequestID(err))
	}
	return a, nil
}

// RequestID is what AWS support asks for when a refusal needs explaining,
// as " (request id …)", or "".
func RequestID(err error) string {
	var awsErr *awshttp.ResponseError
	if errors.As(err, &awsErr) && awsErr.RequestID != "" {
		return " (request id " + awsErr.RequestID + ")"
	}
	return ""
}
