package workflow

import (
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// digestService is a workflow service on a fresh server, not started:
// its steps are called directly.
func digestService(t *testing.T) *Service {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	s, err := New(n.JS, Config{})
	require.NoError(t, err)
	ctx := heraldtest.Context(t)
	s.stream, err = n.JS.Stream(ctx, router.RunsStream)
	require.NoError(t, err)
	s.runs, err = openStore(ctx, n.JS)
	require.NoError(t, err)
	return s
}

// flushes are the schedules waiting on a digest's flush subject.
func flushes(t *testing.T, s *Service, digest string) []string {
	t.Helper()
	info, err := s.stream.Info(heraldtest.Context(t), jetstream.WithSubjectFilter(FlushSubject("acme", digest)))
	require.NoError(t, err)
	if info.State.Subjects[FlushSubject("acme", digest)] == 0 {
		return nil
	}
	m, err := s.stream.GetLastMsgForSubject(heraldtest.Context(t), FlushSubject("acme", digest))
	require.NoError(t, err)
	return []string{m.Header.Get(jetstream.ScheduleHeader)}
}

// A digest closes its window after its first item: a run joining it later
// waits for the flush the first scheduled, and does not move it.
func TestADigestClosesAfterItsFirstItem(t *testing.T) {
	t.Parallel()
	s := digestService(t)
	ctx := heraldtest.Context(t)
	first := time.Now().UTC().Add(time.Hour).Truncate(time.Millisecond)
	until, err := s.gather(ctx, "acme.x.run_a", Run{ID: "run_a", Tenant: "acme"}, "d1", 50, first)
	require.NoError(t, err)
	require.True(t, until.Equal(first))
	until, err = s.gather(ctx, "acme.x.run_b", Run{ID: "run_b", Tenant: "acme"}, "d1", 50, first.Add(time.Minute))
	require.NoError(t, err)
	require.True(t, until.Equal(first), "the second waits for the first's flush: %v", until)
	require.Equal(t, []string{"@at " + first.Format(time.RFC3339Nano)}, flushes(t, s, "d1"))
}

// A digest flushed full takes its flush schedule with it, so the next
// digest of its key opens with a flush of its own.
func TestADigestFlushedFullTakesItsSchedule(t *testing.T) {
	t.Parallel()
	s := digestService(t)
	ctx := heraldtest.Context(t)
	closes := time.Now().UTC().Add(time.Hour)
	for _, id := range []string{"run_a", "run_b"} {
		_, err := s.gather(ctx, "acme.x."+id, Run{ID: id, Tenant: "acme"}, "d2", 2, closes)
		require.NoError(t, err)
	}
	require.Len(t, flushes(t, s, "d2"), 1)
	require.NoError(t, s.flush(ctx, router.RunFlush{Tenant: "acme", Digest: "d2", Max: 2, Early: true}, time.Now()))
	require.Empty(t, flushes(t, s, "d2"), "no flush left to close the next digest early")
	_, err := s.stream.GetLastMsgForSubject(ctx, DigestSubject("acme", "d2"))
	require.ErrorIs(t, err, jetstream.ErrMsgNotFound, "its items purged")
}

// A flush takes the items stored before it was asked for; one gathered
// after waits for the next flush.
func TestAFlushLeavesTheItemsAfterIt(t *testing.T) {
	t.Parallel()
	s := digestService(t)
	ctx := heraldtest.Context(t)
	closes := time.Now().UTC().Add(time.Hour)
	_, err := s.gather(ctx, "acme.x.run_a", Run{ID: "run_a", Tenant: "acme"}, "d3", 50, closes)
	require.NoError(t, err)
	asked := time.Now()
	_, err = s.gather(ctx, "acme.x.run_b", Run{ID: "run_b", Tenant: "acme"}, "d3", 50, closes)
	require.NoError(t, err)
	require.NoError(t, s.flush(ctx, router.RunFlush{Tenant: "acme", Digest: "d3", Max: 50}, asked))
	left, err := s.stream.GetLastMsgForSubject(ctx, DigestSubject("acme", "d3"))
	require.NoError(t, err, "run_b's item is left")
	require.JSONEq(t, `{"run":"acme.x.run_b"}`, string(left.Data))
	info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(DigestSubject("acme", "d3")))
	require.NoError(t, err)
	require.Equal(t, uint64(1), info.State.Subjects[DigestSubject("acme", "d3")], "run_a's is purged")
}

// A write that lands while a run is being advanced (an event remembered,
// a send's notifications noted) does not stop it: the run is read again
// and taken on from where it stands.
func TestAnAdvanceGoesOnAfterAnotherWrite(t *testing.T) {
	t.Parallel()
	s := digestService(t)
	ctx := heraldtest.Context(t)
	event, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	r := Run{ID: "run_0123456789abcdef0123456789abcdef", Tenant: "acme", Subject: "PO-1", Event: event, State: Running,
		Route: router.Route{Event: "order.created", Template: "purchase_order", Steps: []router.Step{
			{Send: &router.SendStep{}}, {Wait: &router.WaitStep{For: router.Duration(time.Hour)}}}}}
	key := Key(r.Tenant, r.Subject, r.ID)
	rev, err := s.runs.create(ctx, key, r)
	require.NoError(t, err)
	other := r
	other.note(time.Now(), "notified", "another writer's")
	_, err = s.runs.update(ctx, key, other, rev)
	require.NoError(t, err)

	require.NoError(t, s.advance(ctx, key, r, rev))
	got, _, err := s.runs.get(ctx, key)
	require.NoError(t, err)
	require.Equal(t, Waiting, got.State)
	require.Equal(t, 1, got.Step)
	require.Equal(t, "notified", got.Timeline[0].What, "the other write is kept")
}
