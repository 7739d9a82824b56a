package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/tenant"
)

// usage is a tenant's month, as `herald tenants usage` prints it.
type usage struct {
	Tenant   string         `json:"tenant"`
	Plan     string         `json:"plan"`
	Month    string         `json:"month"`
	Channels []channelUsage `json:"channels"`
}

type channelUsage struct {
	Channel string `json:"channel"`
	Used    int64  `json:"used"`
	Quota   *int64 `json:"quota"` // null: no quota
	Refused int64  `json:"refused"`
}

func tenantsUsageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "usage ID",
		Short: "Show a tenant's notifications this month per channel, against its plan's quota",
		Long: `Counted when a notification is accepted for delivery, per channel and calendar
month (UTC), in the QUOTAS stream's counters (nats stream view QUOTAS); refused
are those dead-lettered for being over the quota.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			month, _ := cmd.Flags().GetString("month")
			return withPlans(cmd, func(ctx context.Context, reg *tenant.Registry, js jetstream.JetStream, plans tenant.Plans) error {
				t, err := reg.Get(ctx, args[0])
				if err != nil {
					return err
				}
				u, err := readUsage(ctx, quota.New(js), t, plans[t.Plan], month)
				if err != nil {
					return err
				}
				return printJSONOr(cmd, u, func(w io.Writer) { printUsage(w, u) })
			})
		},
	}
	cmd.Flags().String("month", "", "the month, yyyy-mm (default: this one, UTC)")
	jsonFlag(cmd)
	return cmd
}

func readUsage(ctx context.Context, counter *quota.Counter, t tenant.Tenant, plan tenant.Plan, month string) (usage, error) {
	if month == "" {
		month = quota.Month(time.Now())
	}
	if _, err := time.Parse("2006-01", month); err != nil {
		return usage{}, fmt.Errorf("--month: %q is not a month such as 2026-12", month)
	}
	counts, err := counter.TenantMonth(ctx, t.ID, plan, month)
	if err != nil {
		return usage{}, err
	}
	u := usage{Tenant: t.ID, Plan: t.Plan, Month: month}
	for _, got := range counts {
		cu := channelUsage{Channel: string(got.Channel), Used: got.Used, Refused: got.Refused}
		if got.Limited {
			cu.Quota = &got.PerMonth
		}
		u.Channels = append(u.Channels, cu)
	}
	return u, nil
}

func printUsage(w io.Writer, u usage) {
	fmt.Fprintf(w, "tenant %s, plan %s, %s (UTC)\n", u.Tenant, u.Plan, u.Month)
	tw := newTable(w, "CHANNEL", "USED", "QUOTA", "LEFT", "REFUSED")
	for _, c := range u.Channels {
		quotaCell, left := "-", "-"
		if c.Quota != nil {
			quotaCell, left = fmt.Sprint(*c.Quota), fmt.Sprint(max(*c.Quota-c.Used, 0))
		}
		tw.row(c.Channel, c.Used, quotaCell, left, c.Refused)
	}
	_ = tw.flush()
}
