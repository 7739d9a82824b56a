package recipient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/shared/resource"
)

// MaxImport is the most subscribers one Import takes: a larger file is
// imported in several (the CLI does so; the API refuses more in a call).
const MaxImport = 10_000

// ErrTooManyLines is an import of more than MaxImport subscribers; nothing
// of it is written.
var ErrTooManyLines = fmt.Errorf("%w: more than %d subscribers in one import", ErrInvalid, MaxImport)

// The outcomes of an import's line.
const (
	Created = "created"
	Updated = "updated"
	Refused = "refused"
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

// importedSubscriber is one line of an import: a subscriber as the API's
// PUT takes it, with its id. A member it does not have (tenant,
// updated_at, a typo) refuses the line.
type importedSubscriber struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Email    string          `json:"email"`
	Phone    string          `json:"phone"`
	WhatsApp string          `json:"whatsapp"`
	Locale   string          `json:"locale"`
	Timezone string          `json:"timezone"`
	Data     json.RawMessage `json:"data"`
}

// Import stores the subscribers of body, NDJSON, one a line, each on its
// own: a line refused (not JSON, a field at fault) does not stop the
// others, and the report says why, naming the field. More than MaxImport
// non-empty lines is ErrTooManyLines, nothing written. Should the store
// fail (NATS unreachable), that line and the rest are refused as not
// stored, and the error is returned beside the report. progress, when
// not nil, is told each line done, by its number.
func (d *Directory) Import(ctx context.Context, tenant string, body []byte, progress func(line int)) (ImportReport, error) {
	lines := bytes.Split(body, []byte("\n"))
	if n := nonEmpty(lines); n > MaxImport {
		return ImportReport{}, fmt.Errorf("%w (this has %d); nothing was written", ErrTooManyLines, n)
	}
	rep := ImportReport{Tenant: tenant, Lines: []ImportedLine{}}
	var broken error
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		got := ImportedLine{Line: i + 1}
		if broken == nil {
			got, broken = d.importLine(ctx, tenant, i+1, line)
		}
		if broken != nil {
			got.Outcome, got.Error = Refused, "not stored: Herald could not write it right now; import it again"
		}
		rep.add(got)
		if progress != nil {
			progress(i + 1)
		}
	}
	return rep, broken
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
	case Created:
		r.Created++
	case Updated:
		r.Updated++
	default:
		r.Refused++
	}
	r.Lines = append(r.Lines, l)
}

// importLine stores one line, or says why it is refused; the error is
// the store's own trouble, which stops the import.
func (d *Directory) importLine(ctx context.Context, tenant string, n int, line []byte) (ImportedLine, error) {
	var l importedSubscriber
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return ImportedLine{Line: n, Outcome: Refused, Error: "not a subscriber as JSON: " + err.Error()}, nil
	}
	if string(l.Data) == "null" {
		l.Data = nil
	}
	s := Subscriber{Tenant: tenant, ID: l.ID, Name: l.Name, Email: l.Email, Phone: l.Phone, WhatsApp: l.WhatsApp,
		Locale: l.Locale, Timezone: l.Timezone, Data: l.Data, UpdatedAt: time.Now().UTC()}
	created, err := d.Upsert(ctx, s)
	switch {
	case errors.Is(err, ErrInvalid), errors.Is(err, resource.ErrInvalid):
		return ImportedLine{Line: n, ID: l.ID, Outcome: Refused, Error: err.Error()}, nil
	case err != nil:
		return ImportedLine{Line: n, ID: l.ID}, err
	case created:
		return ImportedLine{Line: n, ID: l.ID, Outcome: Created}, nil
	}
	return ImportedLine{Line: n, ID: l.ID, Outcome: Updated}, nil
}

// Upsert stores s (normalized), replacing what its id held, and says
// whether it is new.
func (d *Directory) Upsert(ctx context.Context, s Subscriber) (created bool, err error) {
	s = s.Normalize()
	if err := s.Validate(); err != nil {
		return false, err // before the key: an id that makes none is named so
	}
	_, err = d.Subscribers.Patch(ctx, SubscriberKey(s.Tenant, s.ID), func(cur *Subscriber, found bool) (resource.Write, error) {
		created, *cur = !found, s
		return resource.Save, nil
	})
	return created, err
}
