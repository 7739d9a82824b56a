package vault_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/vault"
)

// Test secrets: long enough for the preview to show their last 4.
const (
	sesKeyID     = "AKIAIOSFODNN7EXAMPLE"
	sesSecret    = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	sendgridKey  = "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"
	smtpPassword = "correct horse battery staple"
	twilioToken  = "f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0"
)

// secrets are every test secret, for checks that none is printed.
var secrets = []string{sesKeyID, sesSecret, sendgridKey, smtpPassword, twilioToken}

func sesCredential() vault.Credential {
	return vault.Credential{Name: "acme-ses", Type: vault.TypeSES, Region: "eu-west-1",
		AccessKeyID: vault.NewSecret(sesKeyID), SecretAccessKey: vault.NewSecret(sesSecret)}
}

func sendgridCredential() vault.Credential {
	return vault.Credential{Name: "sendgrid", Type: vault.TypeSendGrid, Endpoint: "http://127.0.0.1:3000",
		APIKey: vault.NewSecret(sendgridKey)}
}

func smtpCredential() vault.Credential {
	return vault.Credential{Name: "relay", Type: vault.TypeSMTP, Host: "smtp.acme.example", Port: 587,
		Username: "herald", Password: vault.NewSecret(smtpPassword), TLS: "mandatory"}
}

func twilioCredential() vault.Credential {
	return vault.Credential{Name: "acme-twilio", Type: vault.TypeTwilio, AccountSID: "AC0123456789abcdef0123456789abcdef",
		AuthToken: vault.NewSecret(twilioToken), From: "+15005550006", Endpoint: "http://127.0.0.1:3001"}
}

func awssmsCredential() vault.Credential {
	return vault.Credential{Name: "acme-sms", Type: vault.TypeAWSSMS, Region: "eu-west-1",
		AccessKeyID: vault.NewSecret(sesKeyID), SecretAccessKey: vault.NewSecret(sesSecret),
		OriginationIdentity: "+447700900123", ConfigurationSet: "herald"}
}

func TestPreviewShowsAtMostTheLastFour(t *testing.T) {
	t.Parallel()
	require.Equal(t, "", vault.NewSecret("").Preview())
	require.Equal(t, "****", vault.NewSecret("hunter2").Preview(), "a short secret shows nothing of itself")
	require.Equal(t, "****", vault.NewSecret("fifteen-chars!!").Preview())
	require.Equal(t, "****s5cr", sendgridCredential().Secret().Preview())
	require.Equal(t, "****пять", vault.NewSecret("раз-два-три-четыре-пять").Preview(), "characters, not bytes")
	require.Equal(t, "****EKEY", sesCredential().Secret().Preview(), "the secret access key, not the id")
	require.Equal(t, "****aple", smtpCredential().Secret().Preview())
	require.Equal(t, "****d1c0", twilioCredential().Secret().Preview(), "the auth token, not the account SID")
	require.Equal(t, "****EKEY", awssmsCredential().Secret().Preview())
}

// However a credential is printed — fmt with any verb, by value or by
// pointer, slog's text and JSON handlers, encoding/json — its secrets show
// as previews only.
func TestCredentialNeverPrintsItsSecrets(t *testing.T) {
	t.Parallel()
	for _, c := range []vault.Credential{sesCredential(), sendgridCredential(), smtpCredential(), twilioCredential(), awssmsCredential()} {
		var out bytes.Buffer
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
			fmt.Fprintf(&out, verb+"\n", c)
			fmt.Fprintf(&out, verb+"\n", &c)
		}
		fmt.Fprintln(&out, c, c.APIKey, c.Password)
		slog.New(slog.NewTextHandler(&out, nil)).Info("stored", "credential", c, "secret", c.Secret())
		slog.New(slog.NewJSONHandler(&out, nil)).Info("stored", "credential", c, "secret", c.Secret())
		b, err := json.Marshal(c)
		require.NoError(t, err)
		out.Write(b)

		require.Contains(t, out.String(), c.Secret().Preview(), "the preview is shown")
		for _, secret := range secrets {
			require.False(t, strings.Contains(out.String(), secret[:8]), "%s: a secret is printed", c.Type)
			require.False(t, strings.Contains(out.String(), fmt.Sprintf("%x", secret[:8])), "%s: a secret is printed in hex", c.Type)
		}
	}
}

func TestCredentialValidate(t *testing.T) {
	t.Parallel()
	for _, ok := range []vault.Credential{sesCredential(), sendgridCredential(), smtpCredential(), twilioCredential(), awssmsCredential(),
		{Name: "open-relay", Type: vault.TypeSMTP, Host: "10.0.0.25", TLS: "none"},
		{Name: "pool", Type: vault.TypeTwilio, AccountSID: "AC0123456789abcdef0123456789abcdef", AuthToken: vault.NewSecret(twilioToken),
			MessagingServiceSID: "MG0123456789abcdef0123456789abcdef"}} {
		require.NoError(t, ok.Validate(), ok.Name)
	}
	for _, c := range []struct {
		edit func(*vault.Credential)
		base vault.Credential
		want string
	}{
		{func(c *vault.Credential) { c.Name = "acme.ses" }, sesCredential(), `name: "acme.ses" is not a provider name`},
		{func(c *vault.Credential) { c.Type = "mailgun" }, sesCredential(), `type: "mailgun" is not a provider type (want one of [ses sendgrid smtp twilio awssms fcm apns webpush])`},
		{func(c *vault.Credential) { c.Region = "" }, sesCredential(), "region: is required for ses"},
		{func(c *vault.Credential) { c.AccessKeyID = vault.Secret{} }, sesCredential(), "access_key_id, secret_access_key: both are required for ses"},
		{func(c *vault.Credential) { c.APIKey = vault.Secret{} }, sendgridCredential(), "api_key: is required for sendgrid"},
		{func(c *vault.Credential) { c.Endpoint = "api.sendgrid.com" }, sendgridCredential(), `endpoint: "api.sendgrid.com" is not an http(s) URL`},
		{func(c *vault.Credential) { c.Host = "" }, smtpCredential(), "host: is required for smtp"},
		{func(c *vault.Credential) { c.Password = vault.Secret{} }, smtpCredential(), "username, password: give both (SMTP AUTH) or neither"},
		{func(c *vault.Credential) { c.Port = 70000 }, smtpCredential(), "port: 70000 is not a port"},
		{func(c *vault.Credential) { c.TLS = "starttls" }, smtpCredential(), `tls: "starttls" is not one of`},
		{func(c *vault.Credential) { c.APIKey = vault.NewSecret(sendgridKey) }, smtpCredential(), "api_key: is not used by smtp"},
		{func(c *vault.Credential) { c.Region = "eu-west-1" }, sendgridCredential(), "region: is not used by sendgrid"},
		{func(c *vault.Credential) { c.AuthToken = vault.Secret{} }, twilioCredential(), "account_sid, auth_token: both are required for twilio"},
		{func(c *vault.Credential) { c.From = "" }, twilioCredential(), "from, messaging_service_sid: one is required for twilio"},
		{func(c *vault.Credential) { c.Region = "us-east-1" }, twilioCredential(), "region: is not used by twilio"},
		{func(c *vault.Credential) { c.Region = "" }, awssmsCredential(), "region: is required for awssms"},
		{func(c *vault.Credential) { c.SecretAccessKey = vault.Secret{} }, awssmsCredential(), "access_key_id, secret_access_key: both are required for awssms"},
		{func(c *vault.Credential) { c.OriginationIdentity = "+447700900123" }, sesCredential(), "origination_identity: is not used by ses"},
		{func(c *vault.Credential) { c.From = "+15005550006" }, smtpCredential(), "from: is not used by smtp"},
		// Settings are listed in tables: no control character in any.
		{func(c *vault.Credential) { c.Host = "smtp.acme.example\x1b[2J" }, smtpCredential(), "host: holds a control character (U+001B at byte 17)"},
		{func(c *vault.Credential) { c.Username = "orders\x00" }, smtpCredential(), "username: holds a control character (U+0000 at byte 6)"},
		{func(c *vault.Credential) { c.Region = "eu-west-1\u009b" }, sesCredential(), "region: holds a control character (U+009B at byte 9)"},
		{func(c *vault.Credential) { c.ConfigurationSet = "alerts\n" }, awssmsCredential(), "configuration_set: holds a control character"},
		{func(c *vault.Credential) { c.SNSTopics = []string{"arn:aws:sns:eu-west-1:210987654321:x\u2028"} }, sesCredential(), "sns_topics[0]: holds a control character (U+2028"},
	} {
		cred := c.base
		c.edit(&cred)
		err := cred.Validate()
		require.ErrorContains(t, err, c.want)
		for _, secret := range secrets {
			require.False(t, strings.Contains(err.Error(), secret), "an error names a secret")
		}
	}
}
