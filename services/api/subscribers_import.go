package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/recipient"
	records "github.com/heraldhq/herald/shared/resource"
)

// Import bounds. 10,000 subscribers a call, as the issue sets; 16 MiB is
// 1.6 KiB a line on average, room for a subscriber with its contacts and
// some data, while one request's body stays small beside the process's
// memory. A larger import is several calls.
const (
	importMaxLines = 10_000
	importMaxBytes = 16 << 20
	// importTimeout bounds a call's writes: two round trips a line.
	importTimeout = 2 * time.Minute
)

// The outcomes of an import's line.
const (
	outcomeCreated = "created"
	outcomeUpdated = "updated"
	outcomeRefused = "refused"
)

// ImportedLine is what became of one line of an import.
type ImportedLine struct {
	Line    int    `json:"line" doc:"Its number in the body, from 1."`
	ID      string `json:"id,omitempty" doc:"The subscriber's id, when the line has one."`
	Outcome string `json:"outcome" enum:"created,updated,refused"`
	Error   string `json:"error,omitempty" doc:"Why it was refused, naming the field."`
}

// ImportReport is what an import did, line by line.
type ImportReport struct {
	Tenant  string         `json:"tenant"`
	Created int            `json:"created"`
	Updated int            `json:"updated"`
	Refused int            `json:"refused"`
	Lines   []ImportedLine `json:"lines" doc:"One per non-empty line, in order."`
}

// importLine is one line of an import: a subscriber with its id.
type importLine struct {
	ID string `json:"id"`
	SubscriberBody
}

type importInput struct {
	WebhookTenant
	RawBody []byte `contentType:"application/x-ndjson"`
}

func registerImport(s *Service, r *resource[string, recipient.Subscriber, recipient.Subscriber, Subscriber]) {
	o := r.operation(route{Operation: huma.Operation{OperationID: "import-subscribers", Summary: "Create or replace many subscribers",
		Description: fmt.Sprintf("The body is NDJSON (application/x-ndjson): one subscriber a line, as PUT takes it, with its \"id\". "+
			"At most %d lines and %d MiB a call; more is refused whole (413), nothing written. Each line is stored or refused on its own: "+
			"the answer says, line by line, created, updated or refused and why, naming the field.", importMaxLines, importMaxBytes>>20),
		Errors: []int{http.StatusRequestEntityTooLarge}}}, http.MethodPost, r.path+":import", r.write)
	o.MaxBodyBytes = importMaxBytes + 1
	huma.Register(s.api, o, func(ctx context.Context, in *importInput) (*bodyOf[ImportReport], error) {
		rep, err := call(ctx, s, r, in.Tenant, "", importTimeout, func(ctx context.Context, st resourceStore[string, recipient.Subscriber, recipient.Subscriber], tenant string) (ImportReport, error) {
			return s.importSubscribers(ctx, st.(subscribers), tenant, in.RawBody)
		})
		if err != nil {
			return nil, err
		}
		return &bodyOf[ImportReport]{Body: rep}, nil
	})
}

// importSubscribers stores each line of body, once the whole is within
// the bounds. Should the store fail (NATS unreachable), that line and the
// rest are refused as not stored, and the answer says which were.
func (s *Service) importSubscribers(ctx context.Context, st subscribers, tenant string, body []byte) (ImportReport, error) {
	lines := bytes.Split(body, []byte("\n"))
	if n := nonEmpty(lines); n > importMaxLines {
		return ImportReport{}, huma.Error413RequestEntityTooLarge(fmt.Sprintf(
			"the body has %d subscribers, more than %d a call; nothing was written", n, importMaxLines))
	}
	rep := ImportReport{Tenant: tenant, Lines: []ImportedLine{}}
	var broken error
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		got := ImportedLine{Line: i + 1}
		if broken == nil {
			got, broken = st.importLine(ctx, tenant, i+1, line)
		}
		if broken != nil {
			got.Outcome, got.Error = outcomeRefused, "not stored: Herald could not write it right now; send it again"
		}
		rep.add(got)
	}
	if broken != nil {
		s.cfg.Logger.WarnContext(ctx, "subscriber import stopped", "tenant", tenant, "error", broken)
	}
	return rep, nil
}

func nonEmpty(lines [][]byte) int {
	n := 0
	for _, l := range lines {
		if len(bytes.TrimSpace(l)) > 0 {
			n++
		}
	}
	return n
}

func (r *ImportReport) add(l ImportedLine) {
	switch l.Outcome {
	case outcomeCreated:
		r.Created++
	case outcomeUpdated:
		r.Updated++
	default:
		r.Refused++
	}
	r.Lines = append(r.Lines, l)
}

// importLine stores one line, or says why it is refused; the error is
// the store's own trouble, which stops the import.
func (st subscribers) importLine(ctx context.Context, tenant string, n int, line []byte) (ImportedLine, error) {
	var l importLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return ImportedLine{Line: n, Outcome: outcomeRefused, Error: "not a subscriber as JSON: " + err.Error()}, nil
	}
	created, err := st.upsert(ctx, l.subscriber(tenant, l.ID))
	switch {
	case errors.Is(err, records.ErrInvalid):
		return ImportedLine{Line: n, ID: l.ID, Outcome: outcomeRefused, Error: err.Error()}, nil
	case err != nil:
		return ImportedLine{Line: n, ID: l.ID}, err
	case created:
		return ImportedLine{Line: n, ID: l.ID, Outcome: outcomeCreated}, nil
	}
	return ImportedLine{Line: n, ID: l.ID, Outcome: outcomeUpdated}, nil
}

// upsert stores v, saying whether it is new.
func (st subscribers) upsert(ctx context.Context, v recipient.Subscriber) (created bool, err error) {
	if err := v.Validate(); err != nil {
		return false, err // before the key: an id that makes none is named so
	}
	_, err = st.d.Subscribers.Patch(ctx, recipient.SubscriberKey(v.Tenant, v.ID), func(cur *recipient.Subscriber, found bool) (records.Write, error) {
		created, *cur = !found, v
		return records.Save, nil
	})
	return created, err
}
