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

// Entry is one dead letter as an operator sees it.
type Entry struct {
	Seq         uint64      `json:"seq"`
	Time        time.Time   `json:"time"`
	Stream      string      `json:"stream"`
	Consumer    string      `json:"consumer"`
	Subject     string      `json:"subject"`
	OriginalSeq uint64      `json:"original_seq"`
	Deliveries  uint64      `json:"deliveries"`
	Tenant      string      `json:"tenant,omitempty"`
	Reason      string      `json:"reason"`
	Header      nats.Header `json:"-"`
	Data        []byte      `json:"-"`
	Redriven    *Redrive    `json:"redriven,omitempty"`
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
	now := time.Now()
	if len(f.Seqs) > 0 {
		for _, seq := range f.Seqs {
			e, err := x.Get(ctx, seq)
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
		batch, err := c.Fetch(256, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return fmt.Errorf("dlq: reading: %w", err)
		}
		last := true
		for msg := range batch.Messages() {
			md, err := msg.Metadata()
			if err != nil {
				return err
			}
			last = md.NumPending == 0
			e := x.entry(ctx, md.Sequence.Stream, msg.Headers(), msg.Data())
			if f.match(e, now) {
				if err := fn(e); err != nil {
					return err
				}
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return fmt.Errorf("dlq: reading: %w", err)
		}
		if last {
			return ctx.Err()
		}
	}
}

// Get reads one entry by its DLQ sequence.
func (x *Entries) Get(ctx context.Context, seq uint64) (Entry, error) {
	m, err := x.stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Entry{}, fmt.Errorf("dlq: no entry %d", seq)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("dlq: entry %d: %w", seq, err)
	}
	return x.entry(ctx, seq, m.Header, m.Data), nil
}

func (x *Entries) entry(ctx context.Context, seq uint64, h nats.Header, data []byte) Entry {
	e := Entry{
		Seq: seq, Stream: h.Get(deadletter.HeaderStream), Consumer: h.Get(deadletter.HeaderConsumer),
		Subject: h.Get(deadletter.HeaderSubject), Tenant: h.Get(deadletter.HeaderTenant), Reason: h.Get(deadletter.HeaderReason),
		Header: h, Data: data,
	}
	e.Time, _ = time.Parse(time.RFC3339Nano, h.Get(deadletter.HeaderTime))
	e.OriginalSeq, _ = strconv.ParseUint(h.Get(deadletter.HeaderSequence), 10, 64)
	e.Deliveries, _ = strconv.ParseUint(h.Get(deadletter.HeaderDeliveries), 10, 64)
	if kve, err := x.redrives.Get(ctx, strconv.FormatUint(seq, 10)); err == nil {
		var r Redrive
		if json.Unmarshal(kve.Value(), &r) == nil {
			e.Redriven = &r
		}
	}
	return e
}

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
	msg := nats.NewMsg(e.Subject)
	msg.Data = e.Data
	for k, vs := range e.Header {
		if !strings.HasPrefix(k, "Herald-") && k != jetstream.MsgIDHeader {
			msg.Header[k] = vs
		}
	}
	msg.Header.Set(jetstream.MsgIDHeader, r.MsgID)
	if _, err := telemetry.PublishMsg(ctx, x.js, msg); err != nil {
		return r, fmt.Errorf("dlq: redriving %d to %s: %w", e.Seq, e.Subject, err)
	}
	b, _ := json.Marshal(r)
	if _, err := x.redrives.Put(ctx, strconv.FormatUint(e.Seq, 10), b); err != nil {
		return r, fmt.Errorf("dlq: %d was redriven, but not marked: %w", e.Seq, err)
	}
	return r, nil
}

// Delete removes an entry for good.
func (x *Entries) Delete(ctx context.Context, seq uint64) error {
	if err := x.stream.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("dlq: deleting %d: %w", seq, err)
	}
	_ = x.redrives.Delete(ctx, strconv.FormatUint(seq, 10))
	return nil
}
