package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/tenant"
)

// QuotaExceededType is the problem type of a notification refused because
// its tenant's month is already at its plan's quota for the channel.
const QuotaExceededType = "https://herald.dev/problems/quota-exceeded"

// ChannelUsage is a month's count on one channel against the plan.
type ChannelUsage struct {
	Channel string `json:"channel" example:"email"`
	Used    int64  `json:"used" doc:"Notifications accepted for delivery this month (refused ones are not counted here)."`
	Quota   *int64 `json:"quota" doc:"The plan's monthly quota on the channel; null when it has none."`
	Refused int64  `json:"refused" doc:"Notifications refused this month for being over the quota, dead-lettered unsent."`
}

// Usage is a tenant's month, per channel.
type Usage struct {
	Tenant   string         `json:"tenant"`
	Plan     string         `json:"plan"`
	Month    string         `json:"month" example:"2026-12" doc:"The calendar month (UTC) counted."`
	Channels []ChannelUsage `json:"channels"`
}

type usageInput struct {
	Tenant string `query:"tenant" doc:"Whose usage: required with an admin key; a tenant key reads its own tenant's."`
	Month  string `query:"month" pattern:"^[0-9]{4}-[0-9]{2}$" doc:"The month, yyyy-mm (UTC); defaults to the current one."`
}

type usageOutput struct{ Body Usage }

func registerUsage(s *Service) {
	huma.Register(s.api, huma.Operation{
		OperationID: "get-usage",
		Method:      http.MethodGet,
		Path:        "/v1/usage",
		Summary:     "Get this month's usage",
		Description: "How many notifications the tenant sent this month on each channel, against its plan's monthly quota, and how many were refused over it. " +
			"Counted when a notification is accepted for delivery; kept in NATS, not Redis.",
		Tags:     []string{"Tenants"},
		Security: needs(ScopeRead),
		Errors:   []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
	}, s.getUsage)
}

func (s *Service) getUsage(ctx context.Context, in *usageInput) (*usageOutput, error) {
	st, err := s.ready()
	if err != nil {
		return nil, err
	}
	id, err := s.tenantOf(ctx, in.Tenant)
	if err != nil {
		return nil, err
	}
	if !principal(ctx).Reaches(id) {
		return nil, huma.Error404NotFound("no tenant " + id)
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	t, err := st.tenants.Get(cctx, id)
	if errors.Is(err, tenant.ErrNotFound) {
		return nil, huma.Error404NotFound("no tenant " + id)
	}
	if err != nil {
		return nil, unavailable("the tenant registry cannot be read right now")
	}
	month := in.Month
	if month == "" {
		month = quota.Month(time.Now())
	}
	u := Usage{Tenant: id, Plan: t.Plan, Month: month}
	counts, err := quota.New(s.js).TenantMonth(cctx, id, s.cfg.Plans[t.Plan], month)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "quota counters unavailable", "error", err)
		return nil, unavailable("the usage counters cannot be read right now")
	}
	for _, got := range counts {
		cu := ChannelUsage{Channel: string(got.Channel), Used: got.Used, Refused: got.Refused}
		if got.Limited {
			cu.Quota = &got.PerMonth
		}
		u.Channels = append(u.Channels, cu)
	}
	return &usageOutput{Body: u}, nil
}

// limit is t's quota on channel c, from its plan.
func (s *Service) limit(t tenant.Tenant, c event.Channel) quota.Limit {
	perMonth, limited := s.cfg.Plans[t.Plan].Quota(c)
	return quota.Limit{PerMonth: perMonth, Limited: limited}
}

// withinQuota answers 429, before anything is published, a notification
// whose tenant's month is already at its quota on the channel: the
// delivery would refuse it anyway. It is a courtesy, not the guard — the
// delivery workers count, and refuse what passes here in a race.
func (s *Service) withinQuota(ctx context.Context, st *stores, id string, c event.Channel) error {
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	t, err := st.tenants.Get(cctx, id)
	if err != nil {
		return nil // unknown or unreadable: delivery decides
	}
	limit := s.limit(t, c)
	if !limit.Limited {
		return nil
	}
	u, err := quota.New(s.js).Usage(cctx, quota.Key{Tenant: id, Channel: c, Month: quota.Month(time.Now())}, limit)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "quota counters unavailable; not prechecking", "error", err)
		return nil
	}
	if err := u.Exceeded(); err != nil {
		return &huma.ErrorModel{Type: QuotaExceededType, Title: http.StatusText(http.StatusTooManyRequests),
			Status: http.StatusTooManyRequests, Detail: err.Error()}
	}
	return nil
}
