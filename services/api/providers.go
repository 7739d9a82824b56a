package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/vault"
)

// Provider is a tenant's account with one provider: its settings and a
// masked preview of its secret, never the secret.
type Provider struct {
	Name     string `json:"name" example:"acme-ses"`
	Type     string `json:"type" enum:"ses,sendgrid,smtp,twilio,awssms,fcm,apns,webpush"`
	Endpoint string `json:"endpoint,omitempty"`
	Region   string `json:"region,omitempty"`
	Host     string `json:"host,omitempty"`
	Port     int    `json:"port,omitempty"`
	Username string `json:"username,omitempty"`
	TLS      string `json:"tls,omitempty"`

	WebhookPublicKey    string   `json:"webhook_public_key,omitempty"`
	SNSTopics           []string `json:"sns_topics,omitempty"`
	AccountSID          string   `json:"account_sid,omitempty"`
	From                string   `json:"from,omitempty"`
	MessagingServiceSID string   `json:"messaging_service_sid,omitempty"`
	OriginationIdentity string   `json:"origination_identity,omitempty"`
	ConfigurationSet    string   `json:"configuration_set,omitempty"`

	ProjectID      string `json:"project_id,omitempty" doc:"fcm: the Firebase project its service account names."`
	APNsKeyID      string `json:"apns_key_id,omitempty"`
	TeamID         string `json:"team_id,omitempty"`
	Topic          string `json:"topic,omitempty"`
	Production     bool   `json:"production,omitempty"`
	VAPIDPublicKey string `json:"vapid_public_key,omitempty" doc:"webpush: the key the tenant's pages subscribe with."`
	Contact        string `json:"contact,omitempty"`

	Preview   string    `json:"preview" doc:"The secret masked: at most its last 4 characters."`
	KeyID     string    `json:"key_id" doc:"The master key that seals it."`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ProviderAccount is a provider account to store, secrets included: they
// are sealed under the master key before they are written, and never
// answered.
type ProviderAccount struct {
	Type            string `json:"type" enum:"ses,sendgrid,smtp,twilio,awssms,fcm,apns,webpush" doc:"ses, sendgrid and smtp send email; twilio SMS and WhatsApp; awssms SMS; fcm, apns and webpush push, each to its kind of device."`
	Endpoint        string `json:"endpoint,omitempty" doc:"Replaces the API's base URL (all but smtp)."`
	Region          string `json:"region,omitempty" doc:"Required for ses and awssms."`
	AccessKeyID     string `json:"access_key_id,omitempty" doc:"Required for ses and awssms."`
	SecretAccessKey string `json:"secret_access_key,omitempty" doc:"Required for ses and awssms."`
	APIKey          string `json:"api_key,omitempty" doc:"Required for sendgrid."`
	Host            string `json:"host,omitempty" doc:"Required for smtp."`
	Port            int    `json:"port,omitempty"`
	Username        string `json:"username,omitempty" doc:"With password: SMTP AUTH."`
	Password        string `json:"password,omitempty"`
	TLS             string `json:"tls,omitempty" enum:"mandatory,opportunistic,implicit,none" doc:"smtp; defaults to mandatory."`

	WebhookPublicKey string   `json:"webhook_public_key,omitempty" doc:"sendgrid: the Signed Event Webhook's verification key (base64, as SendGrid shows it), for its events posted to /v1/inbound/sendgrid/{tenant}/{name}; optional."`
	SNSTopics        []string `json:"sns_topics,omitempty" maxItems:"20" doc:"ses: the SNS topics (ARNs) its events reach /v1/inbound/ses/{tenant}/{name} through; optional."`

	AccountSID          string `json:"account_sid,omitempty" doc:"Required for twilio."`
	AuthToken           string `json:"auth_token,omitempty" doc:"Required for twilio."`
	From                string `json:"from,omitempty" doc:"twilio: the sender number, E.164 (or messaging_service_sid)."`
	MessagingServiceSID string `json:"messaging_service_sid,omitempty" doc:"twilio: let the service pick the sender."`
	OriginationIdentity string `json:"origination_identity,omitempty" doc:"awssms: the sender (phone number, sender id or pool); optional."`
	ConfigurationSet    string `json:"configuration_set,omitempty" doc:"awssms: the configuration set receiving the message's events; optional."`

	ServiceAccount  string `json:"service_account,omitempty" doc:"Required for fcm: the service account's key file (JSON), which names the Firebase project."`
	AuthKey         string `json:"auth_key,omitempty" doc:"Required for apns: the .p8 key (PEM)."`
	APNsKeyID       string `json:"apns_key_id,omitempty" doc:"Required for apns: the .p8 key's id."`
	TeamID          string `json:"team_id,omitempty" doc:"Required for apns: the Apple developer team."`
	Topic           string `json:"topic,omitempty" doc:"Required for apns: the app's bundle id."`
	Production      bool   `json:"production,omitempty" doc:"apns: send to APNs production, not the sandbox."`
	VAPIDPublicKey  string `json:"vapid_public_key,omitempty" doc:"Required for webpush: the VAPID public key (base64url), the one the tenant's pages subscribe with."`
	VAPIDPrivateKey string `json:"vapid_private_key,omitempty" doc:"Required for webpush: the VAPID private key (base64url)."`
	Contact         string `json:"contact,omitempty" doc:"Required for webpush: mailto: or https: where push services may reach the sender."`
}

// Providers are a tenant's provider accounts, by name.
type Providers struct {
	Providers []Provider `json:"providers"`
}

type providersInput struct {
	Tenant string `path:"id" doc:"The tenant id."`
}

type providerInput struct {
	Tenant string `path:"id" doc:"The tenant id."`
	Name   string `path:"name" doc:"The provider's name in the tenant's chain."`
}

type putProviderInput struct {
	Tenant string `path:"id" doc:"The tenant id."`
	Name   string `path:"name" doc:"The provider's name in the tenant's chain."`
	Body   ProviderAccount
}

type providersOutput struct{ Body Providers }

type providerOutput struct{ Body Provider }

func registerProviders(s *Service) {
	errs := []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusServiceUnavailable}
	huma.Register(s.api, huma.Operation{
		OperationID: "list-providers", Method: http.MethodGet, Path: "/v1/tenants/{id}/providers",
		Summary: "List a tenant's provider accounts", Description: "Settings and masked previews, never a secret.",
		Tags: []string{"Providers"}, Security: needs(ScopeAdmin), Errors: errs,
	}, s.listProviders)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-provider", Method: http.MethodGet, Path: "/v1/tenants/{id}/providers/{name}",
		Summary: "Get a tenant's provider account", Description: "Its settings and masked preview, never a secret.",
		Tags: []string{"Providers"}, Security: needs(ScopeAdmin), Errors: errs,
	}, s.getProvider)
	huma.Register(s.api, huma.Operation{
		OperationID: "put-provider", Method: http.MethodPut, Path: "/v1/tenants/{id}/providers/{name}",
		Summary:     "Store a tenant's provider account",
		Description: "Seals the secrets under the master key (AES-256-GCM) and stores the account, replacing one of the same name. Answers the masked preview only.",
		Tags:        []string{"Providers"}, Security: needs(ScopeAdmin), MaxBodyBytes: s.bodyLimit(),
		Errors: append(errs, http.StatusConflict, http.StatusUnprocessableEntity),
	}, s.putProvider)
	huma.Register(s.api, huma.Operation{
		OperationID: "delete-provider", Method: http.MethodDelete, Path: "/v1/tenants/{id}/providers/{name}",
		Summary: "Remove a tenant's provider account", Description: "With every earlier revision of it.",
		Tags: []string{"Providers"}, DefaultStatus: http.StatusNoContent, Security: needs(ScopeAdmin),
		Errors: append(errs, http.StatusConflict),
	}, s.deleteProvider)
}

// vaultReady is ready, and also a 503 when no master key is configured:
// without one nothing can be sealed, and listing what was sealed would
// tell an operator nothing they could act on.
func (s *Service) vaultReady() (*stores, error) {
	if s.cfg.Keyring == nil {
		return nil, huma.Error503ServiceUnavailable("no master key configured (vault.master_key_env or vault.master_key_file)")
	}
	return s.ready()
}

func (s *Service) listProviders(ctx context.Context, in *providersInput) (*providersOutput, error) {
	st, err := s.vaultReady()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	list, err := s.tenantProviders(cctx, st, in.Tenant)
	if err != nil {
		return nil, err
	}
	out := &providersOutput{Body: Providers{Providers: make([]Provider, len(list))}}
	for i, p := range list {
		out.Body.Providers[i] = Provider(p)
	}
	return out, nil
}

func (s *Service) getProvider(ctx context.Context, in *providerInput) (*providerOutput, error) {
	st, err := s.vaultReady()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	return s.provider(cctx, st, in)
}

func (s *Service) putProvider(ctx context.Context, in *putProviderInput) (*providerOutput, error) {
	st, err := s.vaultReady()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	if _, err := st.tenants.Get(cctx, in.Tenant); err != nil {
		return nil, s.tenantsError(ctx, err)
	}
	b := in.Body
	c := vault.Credential{Name: in.Name, Type: b.Type, Endpoint: b.Endpoint, Region: b.Region,
		AccessKeyID: vault.NewSecret(b.AccessKeyID), SecretAccessKey: vault.NewSecret(b.SecretAccessKey),
		APIKey: vault.NewSecret(b.APIKey), Host: b.Host, Port: b.Port, Username: b.Username,
		Password: vault.NewSecret(b.Password), TLS: b.TLS,
		AccountSID: b.AccountSID, AuthToken: vault.NewSecret(b.AuthToken), From: b.From, MessagingServiceSID: b.MessagingServiceSID,
		OriginationIdentity: b.OriginationIdentity, ConfigurationSet: b.ConfigurationSet,
		WebhookPublicKey: b.WebhookPublicKey, SNSTopics: b.SNSTopics,
		ServiceAccount: vault.NewSecret(b.ServiceAccount), AuthKey: vault.NewSecret(b.AuthKey), APNsKeyID: b.APNsKeyID,
		TeamID: b.TeamID, Topic: b.Topic, Production: b.Production,
		VAPIDPublicKey: b.VAPIDPublicKey, VAPIDPrivateKey: vault.NewSecret(b.VAPIDPrivateKey), Contact: b.Contact}
	// Validate's words name fields, never a secret.
	if err := c.Validate(); err != nil {
		return nil, huma.Error422UnprocessableEntity(err.Error())
	}
	if err := st.vault.Put(cctx, in.Tenant, c); err != nil {
		return nil, s.vaultError(ctx, err)
	}
	return s.provider(cctx, st, &providerInput{Tenant: in.Tenant, Name: in.Name})
}

func (s *Service) deleteProvider(ctx context.Context, in *providerInput) (*struct{}, error) {
	st, err := s.vaultReady()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	if err := st.vault.Delete(cctx, in.Tenant, in.Name); err != nil {
		return nil, s.vaultError(ctx, err)
	}
	return nil, nil
}

// provider reads what the vault shows of one credential, from the
// tenant's list: reading it alone would decrypt it.
func (s *Service) provider(ctx context.Context, st *stores, in *providerInput) (*providerOutput, error) {
	list, err := s.tenantProviders(ctx, st, in.Tenant)
	if err != nil {
		return nil, err
	}
	for _, p := range list {
		if p.Name == in.Name {
			return &providerOutput{Body: Provider(p)}, nil
		}
	}
	return nil, huma.Error404NotFound("tenant " + in.Tenant + " has no provider named " + in.Name)
}

// tenantProviders lists a registered tenant's credentials.
func (s *Service) tenantProviders(ctx context.Context, st *stores, id string) ([]vault.Info, error) {
	if _, err := st.tenants.Get(ctx, id); err != nil {
		return nil, s.tenantsError(ctx, err)
	}
	list, err := st.vault.List(ctx, id)
	if err != nil {
		return nil, s.vaultError(ctx, err)
	}
	return list, nil
}

// vaultError is the answer to a vault error. The vault's errors never hold
// a secret; the log gets them, the caller only what it can act on.
func (s *Service) vaultError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, vault.ErrNotFound):
		return huma.Error404NotFound("no such provider")
	case errors.Is(err, vault.ErrConflict):
		return huma.Error409Conflict("the provider was changed by another request meanwhile; read it and try again")
	}
	s.cfg.Logger.WarnContext(ctx, "vault unavailable", "error", err)
	return unavailable("the credential vault cannot be read right now")
}
