package tenant_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/tenant"
)

const day = 24 * time.Hour

// A retention period is a day at least and ten years at most; unset is
// the platform's.
func TestRetentionIsValidated(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		retention tenant.Retention
		want      []string // the problems; none: valid
	}{
		{"unset", tenant.Retention{}, nil},
		{"a day", tenant.Retention{History: tenant.Period(day), Payloads: tenant.Period(day)}, nil},
		{"ten years", tenant.Retention{Payloads: tenant.Period(tenant.MaxRetention)}, nil},
		{"history of 12h", tenant.Retention{History: tenant.Period(12 * time.Hour)},
			[]string{"retention.history: 12h is shorter than a day, the least Herald keeps anything"}},
		{"payloads of a second", tenant.Retention{Payloads: tenant.Period(time.Second)},
			[]string{"retention.payloads: 1s is shorter than a day, the least Herald keeps anything"}},
		{"over ten years", tenant.Retention{History: tenant.Period(3651 * day), Payloads: tenant.Period(-day)}, []string{
			"retention.history: 3651d is longer than 3650d, the most Herald keeps anything",
			"retention.payloads: -1d is shorter than a day, the least Herald keeps anything",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := valid()
			x.Retention = tt.retention
			err := x.Validate(tenant.BuiltinPlans())
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			var verr *tenant.ValidationError
			require.ErrorAs(t, err, &verr)
			require.Equal(t, tt.want, verr.Problems)
		})
	}
}

// --retention history=90d,payloads=30d sets what it names, an empty
// value goes back to the platform's, and every mistake names its field
// and leaves the retention as it was.
func TestSetRetention(t *testing.T) {
	t.Parallel()
	was := tenant.Retention{History: tenant.Period(60 * day), Payloads: tenant.Period(7 * day)}
	tests := []struct {
		spec    string
		want    tenant.Retention
		problem []string
	}{
		{"history=90d,payloads=30d", tenant.Retention{History: tenant.Period(90 * day), Payloads: tenant.Period(30 * day)}, nil},
		{"payloads=36h", tenant.Retention{History: was.History, Payloads: tenant.Period(36 * time.Hour)}, nil},
		{"history=", tenant.Retention{Payloads: was.Payloads}, nil},
		{"inbox=30d", tenant.Retention{History: was.History, Payloads: was.Payloads, Inbox: tenant.Period(30 * day)}, nil},
		{" history = 2d", was, []string{`retention: " history = 2d" is not history=PERIOD, payloads=PERIOD or inbox=PERIOD`}},
		{"history=90x", was, []string{`retention.history: "90x" is not a period like 90d or 12h`}},
		{"payloads=-1h", was, []string{`retention.payloads: "-1h" is not a period like 90d or 12h`}},
		{"history=9999999d", was, []string{`retention.history: "9999999d" is not a period like 90d or 12h`}},
		{"documents=30d,history=1d\x1b", was, []string{
			`retention: "documents=30d" is not history=PERIOD, payloads=PERIOD or inbox=PERIOD`,
			`retention.history: "1d\x1b" is not a period like 90d or 12h`,
		}},
		{"90d", was, []string{`retention: "90d" is not history=PERIOD, payloads=PERIOD or inbox=PERIOD`}},
		{"history=2d,payloads=soon", was, []string{`retention.payloads: "soon" is not a period like 90d or 12h`}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			t.Parallel()
			r := was
			err := tenant.SetRetention(&r, tt.spec)
			require.Equal(t, tt.want, r)
			if tt.problem == nil {
				require.NoError(t, err)
				return
			}
			var verr *tenant.ValidationError
			require.ErrorAs(t, err, &verr)
			require.Equal(t, tt.problem, verr.Problems)
		})
	}
}

// A tenant's retention is stored as operators write it, and left out when
// unset.
func TestRetentionJSON(t *testing.T) {
	t.Parallel()
	x := tenant.Tenant{ID: "acme", Retention: tenant.Retention{History: tenant.Period(90 * day), Payloads: tenant.Period(36 * time.Hour)}}
	b, err := json.Marshal(x)
	require.NoError(t, err)
	require.Contains(t, string(b), `"retention":{"history":"90d","payloads":"36h"}`)
	var back tenant.Tenant
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, x.Retention, back.Retention)

	b, err = json.Marshal(tenant.Tenant{ID: "acme"})
	require.NoError(t, err)
	require.NotContains(t, string(b), "retention")
}

// The registry refuses a history longer than the ledger keeps (90 days as
// declared): those rows go with the ledger's entries.
func TestRegistryBoundsHistoryByTheLedger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	x := valid()
	x.Retention.History = tenant.Period(91 * day)
	_, err := b.reg.Create(ctx, x)
	var verr *tenant.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, []string{"retention.history: 91d is longer than the ledger keeps notifications (90d, ledger.retention)"}, verr.Problems)

	x.Retention.History = tenant.Period(90 * day)
	_, err = b.reg.Create(ctx, x)
	require.NoError(t, err)
	_, err = b.reg.Update(ctx, "acme", func(t *tenant.Tenant) error {
		t.Retention.History = tenant.Period(100 * day)
		return nil
	})
	require.ErrorAs(t, err, &verr)
	got, err := b.reg.Get(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, tenant.Period(90*day), got.Retention.History, "nothing written")
}
