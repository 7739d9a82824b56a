package workflow

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
	"golang.org/x/sync/errgroup"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/telemetry"
)

// A digest gathers the runs of one route that reach its digest step for
// the same recipient with the same key. Each run adds an item — its key —
// to the digest's subject (runs.digest.<tenant>.<digest>) and waits. The
// digest is open while its flush schedule (runs.flush.<tenant>.<digest>,
// @at the window's end or the cron's next time, firing onto
// runs.wake.<tenant>) exists: the run that opens it publishes its item and
// the schedule in one atomic batch whose schedule expects an empty
// subject, so exactly one flush waits per open digest. The flush reads the
// items, starts one run — the digest's — that takes the steps after the
// digest with every gathered event, ends the gathered runs as merged into
// it, and purges what it read.

// DigestSubject holds an open digest's items.
func DigestSubject(tenant, digest string) string { return "runs.digest." + tenant + "." + digest }

// FlushSubject holds an open digest's flush schedule.
func FlushSubject(tenant, digest string) string { return "runs.flush." + tenant + "." + digest }

// flushBytes bounds the items one flush reads: their runs' events travel
// in one message to the router. What it leaves waits for the next.
const flushBytes = 512 << 10

// item is a digest's item: the run it gathered.
type item struct {
	Run string `json:"run"`
}

// digestID names a digest: the tenant, the route, the recipient and the
// key, so two routes, two people or two keys never share one.
func digestID(r Run, key string) string {
	route, _ := json.Marshal(r.Route)
	person, _ := json.Marshal(r.Recipient)
	h := sha256.New()
	for _, part := range [][]byte{[]byte(r.Tenant), route, person, []byte(key)} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// digest adds the run to its digest, opening one when none is, and holds
// it there until the digest is flushed.
func (s *Service) digest(ctx context.Context, key string, r Run, d router.DigestStep, now time.Time) (Run, error) {
	k, err := render("digest key", d.Key, r)
	if err == nil {
		err = checkRenderedKey(k)
	}
	var closes time.Time
	if err == nil {
		closes, err = s.closes(ctx, r, d, now)
	}
	if err != nil {
		r.State = Failed
		r.note(now, "failed", fmt.Sprintf("step %d: %v", r.Step, err))
		s.count(ctx, r, "digest", "failed")
		return r, nil
	}
	id, maxItems := digestID(r, k), cmp.Or(d.MaxItems, router.MaxDigestItems)
	until, err := s.gather(ctx, key, r, id, maxItems, closes)
	if err != nil {
		return r, err
	}
	r.State, r.Until, r.Digest = Waiting, until, id
	r.note(now, "waiting", fmt.Sprintf("in digest %s (key %q) until %s", id, k, until.Format(time.RFC3339)))
	s.count(ctx, r, "digest", "waiting")
	return r, s.flushWhenFull(ctx, r, id, maxItems)
}

// checkRenderedKey refuses a key a tenant's event made unreadable.
func checkRenderedKey(k string) error {
	if strings.ContainsFunc(k, func(c rune) bool { return c < ' ' || c == 0x7f }) {
		return errors.New("digest key: the event's data put a control character in it")
	}
	return nil
}

// closes is when a digest opened now closes: after its window, or at its
// cron's next time in its time zone (the recipient's, a named one, UTC).
func (s *Service) closes(ctx context.Context, r Run, d router.DigestStep, now time.Time) (time.Time, error) {
	if d.Cron == "" {
		return now.Add(time.Duration(d.Window)), nil
	}
	loc := time.UTC
	if d.Timezone != "" {
		var err error
		if loc, err = s.zone(ctx, r, d.Timezone); err != nil {
			return time.Time{}, err
		}
	}
	next, err := router.NextCron(d.Cron, now.In(loc))
	return next.UTC(), err
}

// gather adds the run's item to the digest and returns when the digest
// closes. The first item and the flush go in one atomic batch whose
// schedule expects an empty subject; when the digest is open already (its
// flush is there to read, or the batch was refused) the item goes alone —
// a refused batch costs the server several times a publish — and the flush
// is asked for again after it, as the open one may have fired meanwhile.
func (s *Service) gather(ctx context.Context, key string, r Run, id string, maxItems int, closes time.Time) (time.Time, error) {
	body, err := json.Marshal(item{Run: key})
	if err != nil {
		return time.Time{}, err
	}
	open, err := s.openFlush(ctx, r.Tenant, id)
	if err != nil {
		return time.Time{}, err
	}
	if open == nil {
		first := nats.NewMsg(DigestSubject(r.Tenant, id))
		first.Data = body
		flush, err := s.flushSchedule(r.Tenant, id, r.Step, maxItems, closes)
		if err != nil {
			return time.Time{}, err
		}
		_, err = jetstreamext.PublishMsgBatch(ctx, s.js, []*nats.Msg{first, flush},
			jetstreamext.BatchFlowControl{AckFirst: false})
		if err == nil {
			return closes, nil
		}
		if !wrongLast(err) {
			return time.Time{}, fmt.Errorf("run %s, step %d: opening its digest: %w", r.ID, r.Step, err)
		}
	}
	alone := nats.NewMsg(DigestSubject(r.Tenant, id))
	alone.Data = body
	alone.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("digest:%s:%d", r.ID, r.Step))
	if _, err := telemetry.PublishMsg(ctx, s.js, alone); err != nil {
		return time.Time{}, fmt.Errorf("run %s, step %d: adding to its digest: %w", r.ID, r.Step, err)
	}
	return s.ensureFlush(ctx, r.Tenant, id, r.Step, maxItems, closes, open)
}

// openFlush is the digest's waiting flush schedule; nil when there is none.
func (s *Service) openFlush(ctx context.Context, tenant, id string) (*jetstream.RawStreamMsg, error) {
	msg, err := s.stream.GetLastMsgForSubject(ctx, FlushSubject(tenant, id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("digest %s: reading its flush: %w", id, err)
	}
	return msg, nil
}

// ensureFlush schedules the digest's flush at closes unless one waits
// already, and returns when the one that waits fires: known's time, when
// the caller read it a moment before, else read again.
func (s *Service) ensureFlush(ctx context.Context, tenant, id string, step, maxItems int, closes time.Time, known *jetstream.RawStreamMsg) (time.Time, error) {
	flush, err := s.flushSchedule(tenant, id, step, maxItems, closes)
	if err != nil {
		return time.Time{}, err
	}
	_, err = telemetry.PublishMsg(ctx, s.js, flush)
	if err == nil {
		return closes, nil
	}
	if !wrongLast(err) {
		return time.Time{}, fmt.Errorf("digest %s: its flush: %w", id, err)
	}
	waiting := known
	if waiting == nil {
		if waiting, err = s.openFlush(ctx, tenant, id); err != nil || waiting == nil {
			return closes, err // none: it fired meanwhile, and the items left over get the next one
		}
	}
	at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(waiting.Header.Get(jetstream.ScheduleHeader), "@at "))
	if err != nil {
		return closes, nil
	}
	return at.UTC(), nil
}

// flushSchedule is the digest's flush: a schedule firing once at closes,
// on a subject that must be empty.
func (s *Service) flushSchedule(tenant, id string, step, maxItems int, closes time.Time) (*nats.Msg, error) {
	body, err := json.Marshal(router.RunMessage{Kind: router.RunFlushKind,
		Flush: &router.RunFlush{Tenant: tenant, Digest: id, Step: step, Max: maxItems}})
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(FlushSubject(tenant, id))
	msg.Data = body
	msg.Header.Set(jetstream.ScheduleHeader, "@at "+closes.UTC().Format(time.RFC3339Nano))
	msg.Header.Set(jetstream.ScheduleTargetHeader, router.RunsWake(tenant))
	msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	return msg, nil
}

// wrongLast says whether err is the server refusing a message whose
// subject was not as expected (here: not empty).
func wrongLast(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// flushWhenFull flushes the digest at once when it holds max items.
func (s *Service) flushWhenFull(ctx context.Context, r Run, id string, maxItems int) error {
	subject := DigestSubject(r.Tenant, id)
	info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return fmt.Errorf("digest %s: counting its items: %w", id, err)
	}
	n := info.State.Subjects[subject]
	if n < uint64(maxItems) {
		return nil
	}
	body, err := json.Marshal(router.RunMessage{Kind: router.RunFlushKind,
		Flush: &router.RunFlush{Tenant: r.Tenant, Digest: id, Step: r.Step, Early: true, Max: maxItems}})
	if err != nil {
		return err
	}
	msg := nats.NewMsg(router.RunsWake(r.Tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("flush:%s:%d", id, info.State.LastSeq))
	if _, err := telemetry.PublishMsg(ctx, s.js, msg); err != nil {
		return fmt.Errorf("digest %s: flushing it full: %w", id, err)
	}
	return nil
}

// entry is an item read back, with where it is in the stream.
type entry struct {
	seq uint64
	run string
}

// flush closes the digest: the items stored before the flush was asked
// for (at), at most a digest's worth; the gathered runs still in it go on
// as one. A flush asked for early finds the digest full, or it was
// flushed already and the flush is dropped.
func (s *Service) flush(ctx context.Context, f router.RunFlush, at time.Time) error {
	items, err := s.items(ctx, f, at)
	if err != nil {
		return err
	}
	if len(items) == 0 || (f.Early && len(items) < f.Max) {
		s.drop(ctx, f.Tenant, "stale_flush")
		return nil
	}
	if f.Early {
		// The schedule of the digest flushed now would flush the next
		// one early.
		if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(FlushSubject(f.Tenant, f.Digest))); err != nil {
			return fmt.Errorf("digest %s: removing its flush: %w", f.Digest, err)
		}
	}
	last, err := s.merge(ctx, f, items)
	if err != nil {
		return err
	}
	subject := DigestSubject(f.Tenant, f.Digest)
	if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeSequence(last+1)); err != nil {
		return fmt.Errorf("digest %s: removing its items: %w", f.Digest, err)
	}
	return s.flushLeftOver(ctx, f)
}

// items reads the digest's items stored by at, in order, each run once.
func (s *Service) items(ctx context.Context, f router.RunFlush, at time.Time) ([]entry, error) {
	msgs, err := jetstreamext.GetBatch(ctx, s.js, router.RunsStream, cmp.Or(f.Max, router.MaxDigestItems),
		jetstreamext.GetBatchSubject(DigestSubject(f.Tenant, f.Digest)), jetstreamext.GetBatchMaxBytes(flushBytes))
	if err != nil {
		return nil, fmt.Errorf("digest %s: reading its items: %w", f.Digest, err)
	}
	var out []entry
	seen := map[string]bool{}
	for msg, err := range msgs {
		if errors.Is(err, jetstreamext.ErrNoMessages) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("digest %s: reading its items: %w", f.Digest, err)
		}
		if msg.Time.After(at) {
			break
		}
		var it item
		if json.Unmarshal(msg.Data, &it) != nil || !strings.HasPrefix(it.Run, f.Tenant+".") {
			continue // not a run's item: nothing to gather
		}
		if !seen[it.Run] {
			seen[it.Run] = true
			out = append(out, entry{seq: msg.Sequence, run: it.Run})
		}
	}
	return out, nil
}

// member is a gathered run that is still in its digest.
type member struct {
	key string
	run Run
	rev uint64
}

// merge starts the digest's run with the gathered runs' events and ends
// each gathered run as merged into it, and returns the last item it read
// (it stops short of the events' budget). Taken again (a crash, a
// conflict), it finds the digest's run made and merges the rest into it.
func (s *Service) merge(ctx context.Context, f router.RunFlush, items []entry) (uint64, error) {
	read, err := s.readMembers(ctx, items)
	if err != nil {
		return 0, err
	}
	var members []member
	size, last := 0, items[0].seq
	for i, it := range items {
		m := read[i]
		if m.rev != 0 && m.run.Step == f.Step && (m.run.State == Waiting || m.run.State == Running) && cmp.Or(m.run.Digest, f.Digest) == f.Digest {
			if size += len(m.run.Event); size > flushBytes && len(members) > 0 {
				break
			}
			members = append(members, m)
		}
		last = it.seq
	}
	id := "run_" + digestID(Run{Tenant: f.Tenant}, fmt.Sprintf("%s:%d", f.Digest, items[0].seq))
	key := Key(f.Tenant, "digest."+f.Digest, id)
	d, rev, err := s.runs.get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		if len(members) == 0 {
			s.drop(ctx, f.Tenant, "stale_flush") // every gathered run ended meanwhile
			return last, nil
		}
		d = s.digestRun(id, f, members)
		rev, err = s.runs.create(ctx, key, d)
		if errors.Is(err, jetstream.ErrKeyExists) {
			d, rev, err = s.runs.get(ctx, key)
		}
	}
	if err != nil {
		return 0, err
	}
	now := s.now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(mergeAtOnce)
	for _, m := range members {
		if !slices.Contains(d.Merged, m.run.ID) {
			continue // not in the digest's run as first made: it waits for the next
		}
		g.Go(func() error {
			r := m.run
			r.State, r.Until = Done, time.Time{}
			r.note(now, "merged", "into digest run "+id)
			s.count(gctx, r, "digest", "merged")
			_, err := s.runs.update(gctx, m.key, r, m.rev)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return last, s.advance(ctx, key, d, rev)
}

// mergeAtOnce bounds the gathered runs a flush reads, or writes, at once:
// a flush's hundred runs take a few round trips' time, not a hundred.
const mergeAtOnce = 16

// readMembers reads the runs of the items, mergeAtOnce at a time; a run
// that no longer exists is read as none (rev 0).
func (s *Service) readMembers(ctx context.Context, items []entry) ([]member, error) {
	out := make([]member, len(items))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(mergeAtOnce)
	for i, it := range items {
		g.Go(func() error {
			r, rev, err := s.runs.get(gctx, it.run)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				return nil
			}
			out[i] = member{it.run, r, rev}
			return err
		})
	}
	return out, g.Wait()
}

// digestRun is the run a digest goes on as: the first gathered run's
// route, recipient and event, every gathered event, at the step after the
// digest.
func (s *Service) digestRun(id string, f router.RunFlush, members []member) Run {
	first, now := members[0].run, s.now()
	d := Run{ID: id, Tenant: f.Tenant, Subject: "digest." + f.Digest, Event: first.Event, StoredAt: first.StoredAt,
		Route: first.Route, Recipient: first.Recipient, Step: f.Step, State: Running, Digest: f.Digest, Created: now}
	for _, m := range members {
		d.Items = append(d.Items, m.run.Event)
		d.Merged = append(d.Merged, m.run.ID)
	}
	d.note(now, "started", fmt.Sprintf("digest %s of %d events", f.Digest, len(members)))
	d.Step++
	return d
}

// flushLeftOver schedules a flush for the items the flush left (gathered
// after it was asked for, or past a digest's worth), when their digest
// closes for the last of them; at once when that run is gone.
func (s *Service) flushLeftOver(ctx context.Context, f router.RunFlush) error {
	msg, err := s.stream.GetLastMsgForSubject(ctx, DigestSubject(f.Tenant, f.Digest))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("digest %s: reading what is left: %w", f.Digest, err)
	}
	closes, now := s.now(), s.now()
	var it item
	if json.Unmarshal(msg.Data, &it) == nil {
		r, _, err := s.runs.get(ctx, it.Run)
		if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return err
		}
		if err == nil && f.Step < len(r.Route.Steps) && r.Route.Steps[f.Step].Digest != nil {
			if closes, err = s.closes(ctx, r, *r.Route.Steps[f.Step].Digest, now); err != nil {
				closes = now
			}
		}
	}
	_, err = s.ensureFlush(ctx, f.Tenant, f.Digest, f.Step, f.Max, closes, nil)
	return err
}
