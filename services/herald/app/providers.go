package app

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/delivery/email/maildir"
	"github.com/heraldhq/herald/services/delivery/email/sendgrid"
	"github.com/heraldhq/herald/services/delivery/email/ses"
	"github.com/heraldhq/herald/services/delivery/email/smtp"
	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/services/delivery/sms/awssms"
	"github.com/heraldhq/herald/services/delivery/sms/textdir"
	"github.com/heraldhq/herald/services/delivery/sms/twilio"
	"github.com/heraldhq/herald/services/inbound"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/vault"
)

// defaultProviders is the production chain: SES, then SendGrid.
var defaultProviders = []ProviderConfig{{Type: "ses"}, {Type: "sendgrid"}}

// buildProviders sets up the configured chain. Errors name the field; a
// provider Config.Validate refuses is not built, and errReported says so
// (after the others were, so that their problems are reported too).
func (a *App) buildProviders(ctx context.Context) ([]email.Named, error) {
	configured := a.emailProviders()
	var out []email.Named
	reported := false
	for i, p := range configured {
		field := fmt.Sprintf("email.providers[%d]", i)
		if p.problem("email", field) != "" {
			reported = true
			continue
		}
		provider, err := a.buildProvider(ctx, field, p)
		if err != nil {
			return nil, err
		}
		out = append(out, email.Named{Name: p.Type, Provider: provider})
	}
	if reported {
		return nil, errReported
	}
	return out, nil
}

func (a *App) buildProvider(ctx context.Context, field string, p ProviderConfig) (email.Provider, error) {
	switch p.Type {
	case "maildir":
		sink, err := maildir.New(p.Dir)
		if err != nil {
			return nil, fmt.Errorf("%s.dir: %w", field, err)
		}
		return sink, nil
	case "ses":
		cfg := ses.Config{Region: cmp.Or(p.Region, a.getenv("AWS_REGION")), Endpoint: p.Endpoint}
		if cfg.Region == "" {
			return nil, fmt.Errorf("%s.region: is required for ses (or set AWS_REGION)", field)
		}
		if p.AccessKeyIDEnv != "" || p.SecretAccessKeyEnv != "" {
			id, err := a.secret(field+".access_key_id_env", p.AccessKeyIDEnv, "")
			if err != nil {
				return nil, err
			}
			key, err := a.secret(field+".secret_access_key_env", p.SecretAccessKeyEnv, "")
			if err != nil {
				return nil, err
			}
			cfg.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, key, ""))
		}
		provider, err := ses.New(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		return provider, nil
	case "sendgrid":
		key, err := a.secret(field+".api_key_env", cmp.Or(p.APIKeyEnv, "SENDGRID_API_KEY"), p.APIKeyFile)
		if err != nil {
			return nil, err
		}
		provider, err := sendgrid.New(sendgrid.Config{APIKey: key, Endpoint: p.Endpoint})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		return provider, nil
	case "smtp":
		cfg := smtp.Config{Host: p.Host, Port: p.Port, Username: p.Username, TLS: p.TLS}
		if p.Username != "" {
			password, err := a.secret(field+".password_env", p.PasswordEnv, p.PasswordFile)
			if err != nil {
				return nil, err
			}
			cfg.Password = password
		}
		provider, err := smtp.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		return provider, nil
	}
	return nil, fmt.Errorf("%s.type: %q is not an email provider", field, p.Type) // refused by problem first
}

// buildAccount makes a provider of a tenant's own account, at the moment
// of use: the plaintext lives in the provider it builds, nowhere else.
func buildAccount(ctx context.Context, _ string, c vault.Credential) (email.Provider, error) {
	switch c.Type {
	case vault.TypeSES:
		return ses.New(ctx, ses.Config{Region: c.Region, Endpoint: c.Endpoint, Credentials: aws.NewCredentialsCache(
			credentials.NewStaticCredentialsProvider(c.AccessKeyID.Reveal(), c.SecretAccessKey.Reveal(), ""))})
	case vault.TypeSendGrid:
		return sendgrid.New(sendgrid.Config{APIKey: c.APIKey.Reveal(), Endpoint: c.Endpoint})
	case vault.TypeSMTP:
		return smtp.New(smtp.Config{Host: c.Host, Port: c.Port, Username: c.Username, Password: c.Password.Reveal(), TLS: c.TLS})
	}
	return nil, fmt.Errorf("%q is not an email provider type", c.Type)
}

// buildTextAccount makes a text-message provider of a tenant's own account,
// at the moment of use, as buildAccount does an email provider. Twilio
// posts its status callbacks to the account's own inbound path, where the
// account's token verifies them.
func (a *App) buildTextAccount(ctx context.Context, tenant string, c vault.Credential) (sms.Provider, error) {
	switch c.Type {
	case vault.TypeTwilio:
		return twilio.New(twilio.Config{AccountSID: c.AccountSID, AuthToken: c.AuthToken.Reveal(), From: c.From,
			MessagingServiceSID: c.MessagingServiceSID, Endpoint: c.Endpoint,
			StatusCallback: a.statusCallback(inbound.Twilio + "/" + tenant + "/" + c.Name)})
	case vault.TypeAWSSMS:
		return awssms.New(ctx, awssms.Config{Region: c.Region, Endpoint: c.Endpoint,
			AccessKeyID: c.AccessKeyID.Reveal(), SecretAccessKey: c.SecretAccessKey.Reveal(),
			OriginationIdentity: c.OriginationIdentity, ConfigurationSetName: c.ConfigurationSet})
	}
	return nil, fmt.Errorf("%q is not a text-message provider type", c.Type)
}

// statusCallback is where a provider posts its reports for path
// (inbound.Path and the provider, then a tenant's account): none without
// documents.public_url, since Herald's own listen address is no address a
// provider can reach.
func (a *App) statusCallback(path string) string {
	if a.cfg.Documents.PublicURL == "" {
		return ""
	}
	return strings.TrimRight(a.cfg.Documents.PublicURL, "/") + inbound.Path + path
}

// secret reads a credential from a file, or else from the environment
// variable named. Errors name where it was looked for, never its value.
func (a *App) secret(field, env, file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s: reading the secret file: %w", strings.TrimSuffix(field, "_env")+"_file", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	if v := strings.TrimSpace(a.getenv(env)); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("%s: the environment variable %s is not set", field, env)
}

func (a *App) getenv(name string) string {
	if a.cfg.Getenv == nil || name == "" {
		return ""
	}
	return a.cfg.Getenv(name)
}

// buildTextProviders sets up a text channel's chain, as buildProviders.
func (a *App) buildTextProviders(ctx context.Context, channel event.Channel, configured []ProviderConfig) ([]sms.Named, error) {
	var out []sms.Named
	reported := false
	for i, p := range configured {
		field := fmt.Sprintf("%s.providers[%d]", channel, i)
		if p.problem(string(channel), field) != "" {
			reported = true
			continue
		}
		provider, err := a.buildTextProvider(ctx, field, p)
		if err != nil {
			return nil, err
		}
		out = append(out, sms.Named{Name: p.Type, Provider: provider})
	}
	if reported {
		return nil, errReported
	}
	return out, nil
}

func (a *App) buildTextProvider(ctx context.Context, field string, p ProviderConfig) (sms.Provider, error) {
	switch p.Type {
	case textdir.Name:
		sink, err := textdir.New(p.Dir)
		if err != nil {
			return nil, fmt.Errorf("%s.dir: %w", field, err)
		}
		return sink, nil
	case "twilio":
		token, err := a.secret(field+".auth_token_env", cmp.Or(p.AuthTokenEnv, "TWILIO_AUTH_TOKEN"), p.AuthTokenFile)
		if err != nil {
			return nil, err
		}
		provider, err := twilio.New(twilio.Config{AccountSID: p.AccountSID, AuthToken: token, From: p.From,
			MessagingServiceSID: p.MessagingServiceSID, Endpoint: p.Endpoint, StatusCallback: a.statusCallback(inbound.Twilio)})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		return provider, nil
	case awssms.Name:
		cfg := awssms.Config{Region: cmp.Or(p.Region, a.getenv("AWS_REGION")), Endpoint: p.Endpoint,
			OriginationIdentity: p.OriginationIdentity, ConfigurationSetName: p.ConfigurationSet}
		if cfg.Region == "" {
			return nil, fmt.Errorf("%s.region: is required for awssms (or set AWS_REGION)", field)
		}
		if p.AccessKeyIDEnv != "" || p.SecretAccessKeyEnv != "" {
			var err error
			if cfg.AccessKeyID, err = a.secret(field+".access_key_id_env", p.AccessKeyIDEnv, ""); err != nil {
				return nil, err
			}
			if cfg.SecretAccessKey, err = a.secret(field+".secret_access_key_env", p.SecretAccessKeyEnv, ""); err != nil {
				return nil, err
			}
		}
		provider, err := awssms.New(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		return provider, nil
	}
	return nil, fmt.Errorf("%s.type: %q is not a text-message provider", field, p.Type) // refused by problem first
}
