package email

import "github.com/heraldhq/herald/shared/domains"

// DomainRegistrar is an email provider that registers a tenant's sending
// domains and says whether it has seen their DNS records (ses, sendgrid).
// The interface is shared/domains', which keeps what they answer; it is
// named here beside Provider for the providers that implement it.
type DomainRegistrar = domains.Registrar
