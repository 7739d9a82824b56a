package ses

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/domains"
)

var _ email.DomainRegistrar = (*Provider)(nil)

// RegisterDomain creates domain as an SES email identity with Easy DKIM
// (SES's default): the tenant publishes three CNAME records, one per DKIM
// token, and SES verifies the domain once it finds them. A domain SES has
// already is read instead, so registering twice answers the same records.
func (p *Provider) RegisterDomain(ctx context.Context, domain string) (domains.State, error) {
	out, err := p.client.CreateEmailIdentity(ctx, &sesv2.CreateEmailIdentityInput{EmailIdentity: aws.String(domain)})
	var exists *types.AlreadyExistsException
	if errors.As(err, &exists) {
		return p.DomainStatus(ctx, domain, "")
	}
	if err != nil {
		return domains.State{}, classify(err)
	}
	return stateOf(domain, out.VerifiedForSendingStatus, out.DkimAttributes), nil
}

// DomainStatus reads domain's identity from SES. ref is unused: SES knows
// an identity by its name. An identity SES no longer has (deleted in its
// console) has failed, saying so.
func (p *Provider) DomainStatus(ctx context.Context, domain, _ string) (domains.State, error) {
	out, err := p.client.GetEmailIdentity(ctx, &sesv2.GetEmailIdentityInput{EmailIdentity: aws.String(domain)})
	var missing *types.NotFoundException
	if errors.As(err, &missing) {
		return domains.State{Status: domains.Failed,
			Detail: "SES has no identity " + domain + " (NotFoundException): it was deleted there; add the domain again"}, nil
	}
	if err != nil {
		return domains.State{}, classify(err)
	}
	return stateOf(domain, out.VerifiedForSendingStatus, out.DkimAttributes), nil
}

// stateOf reads an identity: SES sends from it once VerifiedForSendingStatus
// is true; until then its DKIM status says how far it got.
func stateOf(domain string, verified bool, dkim *types.DkimAttributes) domains.State {
	var st domains.State
	var status types.DkimStatus
	if dkim != nil {
		status = dkim.Status
		for _, token := range dkim.Tokens {
			st.Records = append(st.Records, domains.Record{Type: "CNAME",
				Name: token + "._domainkey." + domain, Value: token + ".dkim.amazonses.com"})
		}
	}
	switch {
	case verified, status == types.DkimStatusSuccess:
		st.Status = domains.Verified
	case status == types.DkimStatusFailed:
		st.Status, st.Detail = domains.Failed, "SES could not find the DKIM records (FAILED): publish them as given, then check again"
	case status == types.DkimStatusTemporaryFailure:
		st.Status, st.Detail = domains.Failed, "SES could not look the DKIM records up for now (TEMPORARY_FAILURE): check again later"
	default: // PENDING, NOT_STARTED
		st.Status, st.Detail = domains.Pending, fmt.Sprintf("SES has not found the DKIM records yet (%s)", cmp.Or(string(status), "no DKIM status"))
	}
	return st
}
