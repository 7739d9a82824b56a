package workflow

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
)

// A window is open from its from to its to on its days, in its zone's
// local time: inside, it lets the run by; outside, it names the next
// opening — on a later day when today's has passed, over days it skips,
// past midnight for a window that closes the next day, and at the local
// hour on the day the clocks change.
func TestWhenAWindowOpens(t *testing.T) {
	t.Parallel()
	madrid, err := time.LoadLocation("Europe/Madrid")
	require.NoError(t, err)
	at := func(text string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04:05", text, madrid)
		require.NoError(t, err)
		return v
	}
	workdays := []string{"mon", "tue", "wed", "thu", "fri", "sat"}
	for _, c := range []struct {
		name     string
		w        router.WindowStep
		now      string
		inside   bool
		opensAt  string
		wantZone string
	}{
		{"inside, a Tuesday", router.WindowStep{Days: workdays, From: "08:00", To: "20:00"}, "2026-12-01 10:00:00", true, "", ""},
		{"before it opens", router.WindowStep{Days: workdays, From: "08:00", To: "20:00"}, "2026-12-01 03:00:00", false, "2026-12-01 08:00:00", "CET"},
		{"at its close: tomorrow", router.WindowStep{Days: workdays, From: "08:00", To: "20:00"}, "2026-12-01 20:00:00", false, "2026-12-02 08:00:00", "CET"},
		{"Saturday night: Monday, Sunday skipped", router.WindowStep{Days: workdays, From: "08:00", To: "20:00"}, "2026-12-05 21:00:00", false, "2026-12-07 08:00:00", "CET"},
		{"seconds", router.WindowStep{From: "10:00:05", To: "11:00"}, "2026-12-01 10:00:00", false, "2026-12-01 10:00:05", "CET"},
		{"overnight, after midnight", router.WindowStep{From: "22:00", To: "06:00"}, "2026-12-02 01:00:00", true, "", ""},
		{"overnight, in the afternoon", router.WindowStep{From: "22:00", To: "06:00"}, "2026-12-02 15:00:00", false, "2026-12-02 22:00:00", "CET"},
		{"the night the clocks go forward", router.WindowStep{From: "08:00", To: "20:00"}, "2026-03-28 23:00:00", false, "2026-03-29 08:00:00", "CEST"},
	} {
		t.Run(c.name, func(t *testing.T) {
			open, inside, err := nextOpening(c.w, at(c.now))
			require.NoError(t, err)
			require.Equal(t, c.inside, inside)
			if !c.inside {
				require.True(t, at(c.opensAt).Equal(open), "opens %s, want %s", open, c.opensAt)
				zone, _ := open.Zone()
				require.Equal(t, c.wantZone, zone)
			}
		})
	}
	_, _, err = nextOpening(router.WindowStep{From: "8h", To: "20:00"}, at("2026-12-01 10:00:00"))
	require.ErrorContains(t, err, `window from: "8h" is not HH:MM or HH:MM:SS`)
}

// A cron digest closes at the cron's next time on the clocks of its zone,
// across a change of the clocks.
func TestACronDigestClosesAtItsZonesNextTime(t *testing.T) {
	t.Parallel()
	s := &Service{}
	for _, c := range []struct {
		zone      string
		now, want string
	}{
		{"Asia/Tokyo", "2026-12-05T06:00:00Z", "2026-12-05T23:00:00Z"},    // 15:00 there: 08:00 tomorrow
		{"Asia/Tokyo", "2026-12-04T22:30:00Z", "2026-12-04T23:00:00Z"},    // 07:30 there: 08:00 today
		{"Europe/Madrid", "2027-03-27T12:00:00Z", "2027-03-28T06:00:00Z"}, // summer time from the 28th
		{"", "2027-03-27T12:00:00Z", "2027-03-28T08:00:00Z"},              // UTC
	} {
		now, err := time.Parse(time.RFC3339, c.now)
		require.NoError(t, err)
		got, err := s.closes(context.Background(), Run{}, router.DigestStep{Cron: "0 8 * * *", Timezone: c.zone}, now)
		require.NoError(t, err)
		require.Equal(t, c.want, got.Format(time.RFC3339), "%s at %s", c.zone, c.now)
	}
}
