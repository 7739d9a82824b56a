package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/vault"
)

func providersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "providers",
		Short: "Store, list and remove tenants' own provider accounts (encrypted at rest)",
		Long: `A tenant can send through its own SES, SendGrid, SMTP, Twilio, Amazon SMS,
FCM, APNs or Web Push account. Its
credentials are kept in the KV bucket credentials, their secrets sealed with
AES-256-GCM under the master key (HERALD_MASTER_KEY, base64 of 32 bytes, or
--master-key-file); listing and removing need no key. Secrets are read from
files only, never from flags, so they stay out of shell history and process
lists; nothing prints more of a secret than its last 4 characters.`,
	}
	cmd.AddCommand(providersSetCommand(), providersListCommand(), providersRemoveCommand())
	return cmd
}

// providerCommands reach the credentials store; setting an account seals
// its secrets with the master key.
var providerCommands = resourceCommands[*vault.Store]{
	open: func(ctx context.Context, _ app.Config, js jetstream.JetStream, keys *vault.Keyring) (*vault.Store, error) {
		return vault.Open(ctx, js, keys)
	},
}

func providersSetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set --tenant ID --name N --type ses|sendgrid|smtp|twilio|awssms|fcm|apns|webpush [settings] [secret files]",
		Short: "Store a tenant's provider account, replacing one of the same name",
		Example: `  herald providers set --tenant acme --name sendgrid-acme --type sendgrid --api-key-file sendgrid.key
  herald providers set --tenant acme --name ses-acme --type ses --region eu-west-1 \
    --access-key-id AKIA... --secret-access-key-file aws.secret
  herald providers set --tenant acme --name relay --type smtp --host smtp.acme.example \
    --port 587 --username herald --password-file smtp.password
  herald providers set --tenant acme --name twilio-acme --type twilio --account-sid AC... \
    --auth-token-file twilio.token --from +15017122661
  herald providers set --tenant acme --name sms-acme --type awssms --region eu-west-1 \
    --access-key-id AKIA... --secret-access-key-file aws.secret --origination-identity +447700900123
  herald providers set --tenant acme --name apns-acme --type apns --auth-key-file AuthKey_ABC123DEFG.p8 \
    --apns-key-id ABC123DEFG --team-id DEF123GHIJ --topic com.acme.shop --production
  herald providers set --tenant acme --name fcm-acme --type fcm --service-account-file firebase-adminsdk.json
  herald providers set --tenant acme --name webpush-acme --type webpush --vapid-public-key BNc... \
    --vapid-private-key-file vapid.key --contact mailto:ops@acme.example

A tenant names its email accounts in its chain with herald tenants set
--providers, its SMS and WhatsApp accounts with --sms-providers and
--whatsapp-providers. Its push accounts need no chain: its devices of a kind
go through its account of that kind, the platform's push provider otherwise.`,
		Args: cobra.NoArgs,
		RunE: setProvider,
	}
	providerFlags(cmd)
	masterKeyFlag(cmd)
	for _, name := range []string{"tenant", "name", "type"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// setProvider stores the account the flags describe. What could not be
// used is refused before the master key is read or anything stored.
func setProvider(cmd *cobra.Command, _ []string) error {
	tenant, _ := cmd.Flags().GetString("tenant")
	c, err := credentialFromFlags(cmd)
	if err != nil {
		return err
	}
	if err := usable(c, tenant); err != nil {
		return err
	}
	keys, err := cliKeyring(cmd)
	if err != nil {
		return err
	}
	return providerCommands.with(cmd, keys, func(ctx context.Context, s *vault.Store) error {
		if err := s.Put(ctx, tenant, c); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "stored %s provider %s for tenant %s (secret %s, sealed under key %s)\n",
			c.Type, c.Name, tenant, c.Secret().Preview(), keys.Current().ID())
		return nil
	})
}

// usable refuses an account that is not valid, or that the tenant's chain
// could not name: a chain names the platform's providers by type, so an
// account of that name would never be used.
func usable(c vault.Credential, tenant string) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%w\n(%s)", err, providerFlagsHint)
	}
	if slices.ContainsFunc(vault.ChannelsOf(c.Type), func(ch event.Channel) bool {
		return slices.Contains(app.ProviderTypes[string(ch)], c.Name)
	}) {
		return fmt.Errorf("name: %q is the platform's provider of that type in a tenant's chain; name the tenant's own account otherwise (e.g. %s-%s)",
			c.Name, c.Name, tenant)
	}
	return nil
}

// settingFlags are the flags of an account's plain settings, each the
// field it sets.
var settingFlags = []struct {
	name, usage string
	field       func(*vault.Credential) *string
}{
	{"name", "the provider's name in the tenant's chain (required)", func(c *vault.Credential) *string { return &c.Name }},
	{"type", "ses, sendgrid, smtp (email), twilio (SMS, WhatsApp), awssms (SMS), fcm, apns or webpush (push) (required)", func(c *vault.Credential) *string { return &c.Type }},
	{"endpoint", "all but smtp: the API's base URL, for an emulator, a proxy or a regional endpoint", func(c *vault.Credential) *string { return &c.Endpoint }},
	{"region", "ses, awssms: the AWS region", func(c *vault.Credential) *string { return &c.Region }},
	{"webhook-public-key", "sendgrid: the Signed Event Webhook's verification key (base64), for /v1/inbound/sendgrid/<tenant>/<name>",
		func(c *vault.Credential) *string { return &c.WebhookPublicKey }},
	{"host", "smtp: the server", func(c *vault.Credential) *string { return &c.Host }},
	{"username", "smtp: the AUTH user", func(c *vault.Credential) *string { return &c.Username }},
	{"tls", "smtp: mandatory (default), opportunistic, implicit or none", func(c *vault.Credential) *string { return &c.TLS }},
	{"account-sid", "twilio: the account SID (AC…)", func(c *vault.Credential) *string { return &c.AccountSID }},
	{"from", "twilio: the sender number, E.164 (or --messaging-service-sid)", func(c *vault.Credential) *string { return &c.From }},
	{"messaging-service-sid", "twilio: the messaging service (MG…) that picks the sender", func(c *vault.Credential) *string { return &c.MessagingServiceSID }},
	{"origination-identity", "awssms: the sender: phone number, sender id or pool", func(c *vault.Credential) *string { return &c.OriginationIdentity }},
	{"configuration-set", "awssms: the configuration set that receives the message's events", func(c *vault.Credential) *string { return &c.ConfigurationSet }},
	{"apns-key-id", "apns: the .p8 key's id", func(c *vault.Credential) *string { return &c.APNsKeyID }},
	{"team-id", "apns: the Apple developer team id", func(c *vault.Credential) *string { return &c.TeamID }},
	{"topic", "apns: the app's bundle id", func(c *vault.Credential) *string { return &c.Topic }},
	{"vapid-public-key", "webpush: the VAPID public key (base64url) the tenant's pages subscribe with", func(c *vault.Credential) *string { return &c.VAPIDPublicKey }},
	{"contact", "webpush: mailto: or https: where push services may reach the sender", func(c *vault.Credential) *string { return &c.Contact }},
}

// secretFileFlags name the files an account's secrets are read from:
// never a flag's value, which shell history and process lists keep.
var secretFileFlags = []struct {
	name, usage string
	field       func(*vault.Credential) *vault.Secret
}{
	{"secret-access-key-file", "ses, awssms: file holding the AWS secret access key", func(c *vault.Credential) *vault.Secret { return &c.SecretAccessKey }},
	{"api-key-file", "sendgrid: file holding the API key", func(c *vault.Credential) *vault.Secret { return &c.APIKey }},
	{"password-file", "smtp: file holding the AUTH password", func(c *vault.Credential) *vault.Secret { return &c.Password }},
	{"auth-token-file", "twilio: file holding the auth token", func(c *vault.Credential) *vault.Secret { return &c.AuthToken }},
	{"service-account-file", "fcm: the service account's key file (JSON), which names the project", func(c *vault.Credential) *vault.Secret { return &c.ServiceAccount }},
	{"auth-key-file", "apns: the .p8 key file", func(c *vault.Credential) *vault.Secret { return &c.AuthKey }},
	{"vapid-private-key-file", "webpush: file holding the VAPID private key (base64url)", func(c *vault.Credential) *vault.Secret { return &c.VAPIDPrivateKey }},
}

// providerFlags are the flags that describe an account to set.
func providerFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("tenant", "", "the tenant (required)")
	for _, s := range settingFlags {
		f.String(s.name, "", s.usage)
	}
	for _, s := range secretFileFlags {
		f.String(s.name, "", s.usage)
	}
	f.String("access-key-id", "", "ses, awssms: the AWS access key id (stored sealed all the same)")
	f.StringSlice("sns-topic", nil, "ses: an SNS topic ARN its events come through to /v1/inbound/ses/<tenant>/<name> (repeatable)")
	f.Int("port", 0, "smtp: the port (default 587, or 465 with --tls implicit)")
	f.Bool("production", false, "apns: send to APNs production rather than the sandbox development builds use")
}

const providerFlagsHint = "ses takes --region, --access-key-id, --secret-access-key-file, --sns-topic and --endpoint; " +
	"sendgrid --api-key-file, --webhook-public-key and --endpoint; smtp --host, --port, --username, --password-file and --tls; " +
	"twilio --account-sid, --auth-token-file, --from or --messaging-service-sid, and --endpoint; " +
	"awssms --region, --access-key-id, --secret-access-key-file, --origination-identity, --configuration-set and --endpoint; " +
	"fcm --service-account-file and --endpoint; apns --auth-key-file, --apns-key-id, --team-id, --topic, --production and --endpoint; " +
	"webpush --vapid-public-key, --vapid-private-key-file and --contact"

// credentialFromFlags reads the credential the flags describe, its secrets
// from the files named.
func credentialFromFlags(cmd *cobra.Command) (vault.Credential, error) {
	f := cmd.Flags()
	var c vault.Credential
	for _, s := range settingFlags {
		*s.field(&c), _ = f.GetString(s.name)
	}
	c.Port, _ = f.GetInt("port")
	c.Production, _ = f.GetBool("production")
	c.SNSTopics, _ = f.GetStringSlice("sns-topic")
	id, _ := f.GetString("access-key-id")
	c.AccessKeyID = vault.NewSecret(id)
	for _, s := range secretFileFlags {
		path, _ := f.GetString(s.name)
		if path == "" {
			continue
		}
		secret, err := readSecretFile(path)
		if err != nil {
			return c, fmt.Errorf("--%s: %w", s.name, err)
		}
		*s.field(&c) = secret
	}
	return c, nil
}

// readSecretFile reads a secret, without the newline an editor or echo
// leaves at its end. Errors never quote the file's content.
func readSecretFile(path string) (vault.Secret, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return vault.Secret{}, err
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		return vault.Secret{}, fmt.Errorf("%s is empty", path)
	}
	return vault.NewSecret(s), nil
}

func providersListCommand() *cobra.Command {
	return providerCommands.command(resourceCommand[*vault.Store]{
		use: "list --tenant ID", short: "List a tenant's provider accounts: settings and masked secrets",
		flags: func(cmd *cobra.Command) { cmd.Flags().Bool("json", false, "print JSON") },
		run: func(cmd *cobra.Command, ctx context.Context, s *vault.Store, tenant, _ string) error {
			list, err := s.List(ctx, tenant)
			if err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(append([]vault.Info{}, list...))
			}
			printProviders(cmd.OutOrStdout(), list)
			return nil
		},
	})
}

func printProviders(w io.Writer, list []vault.Info) {
	tw := newTable(w, "NAME", "TYPE", "SETTINGS", "SECRET", "KEY", "UPDATED")
	for _, p := range list {
		tw.row(p.Name, p.Type, dash(providerSettings(p)), dash(p.Preview), p.KeyID, p.UpdatedAt.Local().Format(time.DateTime))
	}
	_ = tw.flush()
	fmt.Fprintln(w, count(len(list), "provider"))
}

// providerSettings says where a provider sends, in one cell.
func providerSettings(p vault.Info) string {
	var parts []string
	add := func(name, value string) {
		if value != "" {
			parts = append(parts, name+"="+value)
		}
	}
	add("region", p.Region)
	add("endpoint", p.Endpoint)
	if p.Host != "" {
		host := p.Host
		if p.Port != 0 {
			host = fmt.Sprintf("%s:%d", p.Host, p.Port)
		}
		add("host", host)
	}
	add("username", p.Username)
	add("tls", p.TLS)
	add("account", p.AccountSID)
	add("from", p.From)
	add("service", p.MessagingServiceSID)
	add("from", p.OriginationIdentity)
	add("configuration_set", p.ConfigurationSet)
	add("project", p.ProjectID)
	add("apns_key", p.APNsKeyID)
	add("team", p.TeamID)
	add("topic", p.Topic)
	if p.Production {
		add("apns", "production")
	}
	add("vapid_public_key", p.VAPIDPublicKey)
	add("contact", p.Contact)
	return strings.Join(parts, " ")
}

func providersRemoveCommand() *cobra.Command {
	return providerCommands.command(resourceCommand[*vault.Store]{
		use: "remove --tenant ID --name N", short: "Remove a tenant's provider account, with every earlier revision of it",
		key: "name", keyUsage: "the provider's name (required)",
		run: func(cmd *cobra.Command, ctx context.Context, s *vault.Store, tenant, name string) error {
			err := s.Delete(ctx, tenant, name)
			if errors.Is(err, vault.ErrNotFound) {
				return fmt.Errorf("tenant %s has no provider named %q", tenant, name)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed provider %s of tenant %s\n", name, tenant)
			return nil
		},
	})
}
