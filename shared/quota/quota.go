// Package quota counts what each tenant sends, per channel and calendar
// month (UTC), against its plan's monthly quota.
//
// The counts are JetStream counters (nats-server 2.12+, a stream with
// allow_msg_counter) in the stream QUOTAS: a message with an empty body and
// the header Nats-Incr: +1 on quota.<tenant>.<channel>.<yyyy-mm> adds one,
// and the server answers with the new total, so counting and reading the
// count are one atomic round trip and two workers never both take the last
// notification of a quota. Notifications refused over quota are counted on
// the same subject ending in .refused. Counters live in NATS, beside the
// ledger, not in Redis: a Redis restart must not hand a tenant a new month.
//
// Why counters and not a KV bucket with revision checks: a revision-checked
// increment is a read and a conditional write, retried on every conflict —
// and conflicts are the rule when one tenant's burst is spread over many
// workers; a counter is one publish whatever the contention, and its total
// comes back in the acknowledgement.
package quota

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
)

// Stream is the stream declared in streams/QUOTAS.
const Stream = "QUOTAS"

// timeout bounds a round trip when ctx has no deadline.
const timeout = 5 * time.Second

// Month is the calendar month (UTC) t counts in: "2026-12".
func Month(t time.Time) string { return t.UTC().Format("2006-01") }

// Key is one tenant's count on one channel in one month.
type Key struct {
	Tenant  string
	Channel event.Channel
	Month   string // yyyy-mm, see Month
}

// Subject is where the key's notifications are counted.
func (k Key) Subject() string {
	return fmt.Sprintf("quota.%s.%s.%s", k.Tenant, k.Channel, k.Month)
}

// RefusedSubject is where the key's notifications refused over quota are
// counted.
func (k Key) RefusedSubject() string { return k.Subject() + ".refused" }

// validate keeps every part one subject token.
func (k Key) validate() error {
	for name, v := range map[string]string{"tenant": k.Tenant, "channel": string(k.Channel), "month": k.Month} {
		if err := subjectToken(name, v); err != nil {
			return err
		}
	}
	return nil
}

// subjectToken says what keeps v, the counter's name part, from being one
// subject token.
func subjectToken(name, v string) error {
	if v == "" || strings.ContainsAny(v, ".*> \t\r\n") {
		return fmt.Errorf("quota: %s %q cannot be a subject token", name, v)
	}
	return nil
}

// Counter adds to and reads the counters. Its zero value is not usable;
// New makes one.
type Counter struct {
	nc *nats.Conn
	// stream holds the counters: QUOTAS, or another counter stream.
	stream string

	mu sync.Mutex
	// forming is the group of each key that notifications join, until it
	// is sent; last, the group of each key sent last, while it is on its
	// way (see Count).
	forming, last map[Key]*group
}

// New returns a counter on js's connection. It needs no binding: QUOTAS is
// created by streams.Apply, and a counter never counted reads 0.
func New(js jetstream.JetStream) *Counter { return On(js, Stream) }

// On returns a counter of another counter stream's (the workflows'
// THROTTLES): Add, Get and the duplicate's total read there.
func On(js jetstream.JetStream, stream string) *Counter {
	return &Counter{nc: js.Conn(), stream: stream}
}

// ErrNoStream means no stream takes the counter's subject: QUOTAS was not
// applied.
var ErrNoStream = errors.New("quota: no stream stores the counters (is QUOTAS applied?)")

// counted is the acknowledgement of a counter increment: the stream's
// usual pub ack, with the new total as a decimal string in val (a counter
// may exceed what a JSON number holds exactly).
type counted struct {
	Stream    string `json:"stream"`
	Sequence  uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate"`
	Val       string `json:"val"`
	Error     *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
}

// Add adds delta to the counter on subject and returns its new total.
// With msgID set, adding twice under it within QUOTAS' duplicate window
// adds once; the second answer is the total the first one made, or — when
// that message was already replaced — the current total.
func (c *Counter) Add(ctx context.Context, subject string, delta int64, msgID string) (int64, error) {
	total, _, err := c.add(ctx, subject, delta, msgID)
	return total, err
}

// add is Add, saying whether msgID had already counted.
func (c *Counter) add(ctx context.Context, subject string, delta int64, msgID string) (total int64, duplicate bool, err error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	msg := nats.NewMsg(subject)
	msg.Header.Set("Nats-Incr", fmt.Sprintf("%+d", delta))
	if msgID != "" {
		msg.Header.Set(jetstream.MsgIDHeader, msgID)
	}
	reply, err := c.nc.RequestMsgWithContext(ctx, msg)
	if errors.Is(err, nats.ErrNoResponders) {
		return 0, false, ErrNoStream
	}
	if err != nil {
		return 0, false, fmt.Errorf("quota: counting on %s: %w", subject, err)
	}
	var ack counted
	if err := json.Unmarshal(reply.Data, &ack); err != nil {
		return 0, false, fmt.Errorf("quota: counting on %s: not an acknowledgement: %q", subject, reply.Data)
	}
	if ack.Error != nil {
		return 0, false, fmt.Errorf("quota: counting on %s: %s (%d)", subject, ack.Error.Description, ack.Error.ErrCode)
	}
	if ack.Duplicate {
		if total, found, err := c.at(ctx, ack.Sequence); err == nil && found {
			return total, true, nil
		}
		total, err := c.Get(ctx, subject)
		return total, true, err
	}
	total, err = parseVal(subject, ack.Val)
	return total, false, err
}

// Get reads the counter's total on subject: the last message for it, by
// direct get ({"val":"N"}); a counter never counted is 0.
func (c *Counter) Get(ctx context.Context, subject string) (int64, error) {
	total, _, err := c.direct(ctx, "$JS.API.DIRECT.GET."+c.stream+"."+subject, nil, subject)
	return total, err
}

// at reads the total that the message at seq recorded, if the stream
// still has it: each subject keeps its last message only.
func (c *Counter) at(ctx context.Context, seq uint64) (int64, bool, error) {
	body, _ := json.Marshal(map[string]uint64{"seq": seq})
	return c.direct(ctx, "$JS.API.DIRECT.GET."+c.stream, body, fmt.Sprintf("sequence %d", seq))
}

// direct asks for one message; found is false when there is none.
func (c *Counter) direct(ctx context.Context, api string, body []byte, what string) (total int64, found bool, err error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	reply, err := c.nc.RequestWithContext(ctx, api, body)
	if errors.Is(err, nats.ErrNoResponders) {
		return 0, false, ErrNoStream
	}
	if err != nil {
		return 0, false, fmt.Errorf("quota: reading %s: %w", what, err)
	}
	// A direct get answers a message, or a status without a body: 404
	// when there is none.
	switch status := reply.Header.Get("Status"); status {
	case "":
	case "404":
		return 0, false, nil
	default:
		return 0, false, fmt.Errorf("quota: reading %s: status %s %s", what, status, reply.Header.Get("Description"))
	}
	var v struct {
		Val string `json:"val"`
	}
	if err := json.Unmarshal(reply.Data, &v); err != nil {
		return 0, false, fmt.Errorf("quota: reading %s: not a counter: %q", what, reply.Data)
	}
	total, err = parseVal(what, v.Val)
	return total, err == nil, err
}

func parseVal(what, val string) (int64, error) {
	n, err := strconv.ParseInt(val, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("quota: %s: total %q is not a count", what, val)
	}
	return n, nil
}

func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, timeout)
}
