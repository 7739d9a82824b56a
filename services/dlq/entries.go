package dlq

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/telemetry"
)

// RedrivesBucket records which entries were redriven (streams/KV_dlq_redrives).
const RedrivesBucket = "dlq_redrives"

// ErrNoEntry means the DLQ holds no entry at that sequence.
var ErrNoEntry = errors.New("no entry")

// Entry is one dead letter as an operator sees it.
type Entry struct {
	Seq         uint64    `json:"seq"`
	Time        time.Time `json:"time"`
	Stream      string    `json:"stream"`
	Consumer    string    `json:"consumer"`
	Subject     string    `json:"subject"`
	OriginalSeq uint64    `json:"original_seq"`
	Deliveries  uint64    `json:"deliveries"`
	Tenant      string    `json:"tenant,omitempty"`
	Reason      string    `json:"reason"`
	// PayloadObject names the object in deadletter.PayloadBucket that
	// keeps the payload when it was too large for the entry (Data is then
	// empty: read it with Payload).
	PayloadObject string      `json:"payload_object,omitempty"`
	Header        nats.Header `json:"-"`
	Data          []byte      `json:"-"`
	Redriven      *Redrive    `json:"redriven,omitempty"`
}

// Redrive is the record of an entry sent back to its subject.
type Redrive struct {
	Time  time.Time `json:"time"`
	MsgID string    `json:"msg_id"`
	Count int       `json:"count"`
}

// Filter selects entries; zero fields match everything.
type Filter struct {
	Stream, Consumer string
	Tenant           string
	Reason           string // substring, case-insensitive
	OlderThan        time.Duration
	NewerThan        time.Duration
	Seqs             []uint64
}

func (f Filter) subject() string {
	if f.Stream == "" {
		return "dlq.>"
	}
	return deadletter.Subject(f.Stream, cmp.Or(f.Consumer, "*"))
}

// bySubject says whether the filter selects by subject alone, so the
// stream's per-subject counts say how many entries it selects.
func (f Filter) bySubject() bool {
	return len(f.Seqs) == 0 && f.Tenant == "" && f.Reason == "" && f.OlderThan == 0 && f.NewerThan == 0
}

func (f Filter) match(e Entry, now time.Time) bool {
	age := now.Sub(e.Time)
	switch {
	case len(f.Seqs) > 0 && !slices.Contains(f.Seqs, e.Seq),
		f.Consumer != "" && e.Consumer != f.Consumer,
		f.Tenant != "" && e.Tenant != f.Tenant,
		f.Reason != "" && !strings.Contains(strings.ToLower(e.Reason), strings.ToLower(f.Reason)),
		f.OlderThan > 0 && age < f.OlderThan,
		f.NewerThan > 0 && age > f.NewerThan:
		return false
	}
	return true
}

// Entries reads and acts on the DLQ.
type Entries struct {
	js       jetstream.JetStream
	stream   jetstream.Stream
	redrives jetstream.KeyValue
}

// OpenEntries binds to the DLQ stream and the redrives bucket.
func OpenEntries(ctx context.Context, js jetstream.JetStream) (*Entries, error) {
	stream, err := js.Stream(ctx, Stream)
	if err != nil {
		return nil, fmt.Errorf("dlq: stream %s: %w", Stream, err)
	}
	kv, err := js.KeyValue(ctx, RedrivesBucket)
	if err != nil {
		return nil, fmt.Errorf("dlq: bucket %s: %w", RedrivesBucket, err)
	}
	return &Entries{js: js, stream: stream, redrives: kv}, nil
}

// Each calls fn with every entry the filter selects, oldest first.
func (x *Entries) Each(ctx context.Context, f Filter, fn func(Entry) error) error {
	return x.scan(ctx, f, func(e Entry) error { return fn(x.withRedrive(ctx, e)) })
}

// List returns the first limit entries the filter selects (all of them
// when limit is 0), oldest first, and how many it selects in all.
func (x *Entries) List(ctx context.Context, f Filter, limit int) ([]Entry, int, error) {
	var list []Entry
	total, counted := 0, false
	if f.bySubject() && limit > 0 {
		n, err := x.count(ctx, f)
		if err != nil {
			return nil, 0, err
		}
		total, counted = n, true
	}
	enough := errors.New("enough")
	err := x.scan(ctx, f, func(e Entry) error {
		if !counted {
			total++
		}
		switch {
		case limit == 0 || len(list) < limit:
			list = append(list, x.withRedrive(ctx, e))
		case counted:
			return enough
		}
		return nil
	})
	if err != nil && !errors.Is(err, enough) {
		return nil, 0, err
	}
	// Entries written between the count and the scan.
	return list, max(total, len(list)), nil
}

// count is how many entries the subject filter selects, from the stream's
// per-subject counts: no entry is read.
func (x *Entries) count(ctx context.Context, f Filter) (int, error) {
	info, err := x.stream.Info(ctx, jetstream.WithSubjectFilter(f.subject()))
	if err != nil {
		return 0, fmt.Errorf("dlq: counting: %w", err)
	}
	total := 0
	for _, n := range info.State.Subjects {
		total += int(n)
	}
	return total, nil
}

// scan calls fn with every entry the filter selects, oldest first, without
// their redrive records.
func (x *Entries) scan(ctx context.Context, f Filter, fn func(Entry) error) error {
	now := time.Now()
	if len(f.Seqs) > 0 {
		for _, seq := range f.Seqs {
			e, err := x.get(ctx, seq)
			if err != nil {
				return err
			}
			if f.match(e, now) {
				if err := fn(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	c, err := x.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{f.subject()}})
	if err != nil {
		return fmt.Errorf("dlq: reading: %w", err)
	}
	for {
		last, err := scanBatch(ctx, c, f, now, fn)
		if err != nil || last {
			return err
		}
	}
}

// scanBatch reads one batch of entries; last is whether it held the last
// one. The fetch ends with the batch — also when fn stops the scan early,
// which would otherwise leave the fetch waiting out its expiry.
func scanBatch(ctx context.Context, c jetstream.Consumer, f Filter, now time.Time, fn func(Entry) error) (last bool, err error) {
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	batch, err := c.Fetch(256, jetstream.FetchContext(fctx))
	if err != nil {
		return false, fmt.Errorf("dlq: reading: %w", err)
	}
	last = true
	for msg := range batch.Messages() {
		md, err := msg.Metadata()
		if err != nil {
			return false, err
		}
		e := entry(md.Sequence.Stream, msg.Headers(), msg.Data())
		if f.match(e, now) {
			if err := fn(e); err != nil {
				return false, err
			}
		}
		if last = md.NumPending == 0; last {
			return true, nil
		}
	}
	// A batch that waited out its time without a message is the end, not a
	// failure; the caller's own ctx ending is.
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		return false, fmt.Errorf("dlq: reading: %w", err)
	}
	return last, ctx.Err()
}

// Get reads one entry by its DLQ sequence.
func (x *Entries) Get(ctx context.Context, seq uint64) (Entry, error) {
	e, err := x.get(ctx, seq)
	if err != nil {
		return e, err
	}
	return x.withRedrive(ctx, e), nil
}

func (x *Entries) get(ctx context.Context, seq uint64) (Entry, error) {
	m, err := x.stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Entry{}, fmt.Errorf("dlq: %w %d", ErrNoEntry, seq)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("dlq: entry %d: %w", seq, err)
	}
	return entry(seq, m.Header, m.Data), nil
}

func entry(seq uint64, h nats.Header, data []byte) Entry {
	e := Entry{
		Seq: seq, Stream: h.Get(deadletter.HeaderStream), Consumer: h.Get(deadletter.HeaderConsumer),
		Subject: h.Get(deadletter.HeaderSubject), Tenant: h.Get(deadletter.HeaderTenant), Reason: h.Get(deadletter.HeaderReason),
		PayloadObject: h.Get(deadletter.HeaderPayloadObject), Header: h, Data: data,
	}
	e.Time, _ = time.Parse(time.RFC3339Nano, h.Get(deadletter.HeaderTime))
	e.OriginalSeq, _ = strconv.ParseUint(h.Get(deadletter.HeaderSequence), 10, 64)
	e.Deliveries, _ = strconv.ParseUint(h.Get(deadletter.HeaderDeliveries), 10, 64)
	return e
}

// withRedrive adds the entry's redrive record, if it has one.
func (x *Entries) withRedrive(ctx context.Context, e Entry) Entry {
	if kve, err := x.redrives.Get(ctx, strconv.FormatUint(e.Seq, 10)); err == nil {
		var r Redrive
		if json.Unmarshal(kve.Value(), &r) == nil {
			e.Redriven = &r
		}
	}
	return e
}

// Payload is the entry's original payload, read from the object store
// when it was kept there.
func (x *Entries) Payload(ctx context.Context, e Entry) ([]byte, error) {
	data, err := deadletter.Payload(ctx, x.js, e.Header, e.Data)
	if err != nil {
		return nil, fmt.Errorf("dlq: entry %d: %w", e.Seq, err)
	}
	return data, nil
}

// ErrTooLarge: an entry kept when the server allowed larger messages
// cannot be published again as it is.
var ErrTooLarge = errors.New("too large to publish")

// Redrive republishes an entry to its original subject, with its original
// headers and a fresh Nats-Msg-Id (the original id was seen, and may still
// be within the duplicate window), and records the redrive. Redriving the
// same entry again publishes it again: the delivery ledger, not the DLQ,
// is what prevents a second send.
func (x *Entries) Redrive(ctx context.Context, e Entry) (Redrive, error) {
	if e.Subject == "" {
		return Redrive{}, fmt.Errorf("dlq: entry %d has no original subject", e.Seq)
	}
	r := Redrive{Time: time.Now().UTC(), Count: 1}
	if e.Redriven != nil {
		r.Count = e.Redriven.Count + 1
	}
	r.MsgID = fmt.Sprintf("redrive:%d:%d", e.Seq, r.Count)
	data, err := x.Payload(ctx, e)
	if err != nil {
		return r, err
	}
	msg := nats.NewMsg(e.Subject)
	msg.Data = data
	// Herald's own headers describe the entry; Nats-* ones are the
	// server's (Nats-Msg-Id, and Nats-Stream, Nats-Subject… that a read
	// by sequence adds), which must not travel with the copy.
	for k, vs := range e.Header {
		if !strings.HasPrefix(k, "Herald-") && !strings.HasPrefix(k, "Nats-") {
			msg.Header[k] = vs
		}
	}
	msg.Header.Set(jetstream.MsgIDHeader, r.MsgID)
	if size, limit := deadletter.Size(msg), x.js.Conn().MaxPayload(); size > limit {
		return r, fmt.Errorf("dlq: entry %d cannot be redriven: %w: with its headers it is %d bytes, over the server's max_payload of %d (its payload is in %s/%s)",
			e.Seq, ErrTooLarge, size, limit, deadletter.PayloadBucket, e.PayloadObject)
	}
	if _, err := telemetry.PublishMsg(ctx, x.js, msg); err != nil {
		return r, fmt.Errorf("dlq: redriving %d to %s: %w", e.Seq, e.Subject, err)
	}
	b, _ := json.Marshal(r)
	if _, err := x.redrives.Put(ctx, strconv.FormatUint(e.Seq, 10), b); err != nil {
		return r, fmt.Errorf("dlq: %d was redriven, but not marked: %w", e.Seq, err)
	}
	return r, nil
}

// Delete removes an entry for good, with the payload it kept in the
// object store. The entry goes first: a payload left behind by a failure
// expires with its bucket's max_age, an entry without its payload would not
// be readable.
func (x *Entries) Delete(ctx context.Context, e Entry) error {
	if err := x.stream.DeleteMsg(ctx, e.Seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("dlq: deleting %d: %w", e.Seq, err)
	}
	_ = x.redrives.Delete(ctx, strconv.FormatUint(e.Seq, 10))
	if err := deadletter.DeletePayload(ctx, x.js, e.Header); err != nil {
		return fmt.Errorf("dlq: %d deleted, but not its payload: %w", e.Seq, err)
	}
	return nil
}
