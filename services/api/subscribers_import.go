package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/recipient"
)

// Import bounds. recipient.MaxImport subscribers a call; 16 MiB is 1.6
// KiB a line on average, room for a subscriber with its contacts and some
// data, while one request's body stays small beside the process's memory.
// A larger import is several calls.
const (
	importMaxBytes = 16 << 20
	// importTimeout bounds a call's writes: two round trips a line.
	importTimeout = 2 * time.Minute
)

type importInput struct {
	WebhookTenant
	RawBody []byte `contentType:"application/x-ndjson"`
}

func registerImport(s *Service, r *resource[string, recipient.Subscriber, recipient.Subscriber, Subscriber]) {
	o := r.operation(route{Operation: huma.Operation{OperationID: "import-subscribers", Summary: "Create or replace many subscribers",
		Description: fmt.Sprintf("The body is NDJSON (application/x-ndjson): one subscriber a line, as PUT takes it, with its \"id\". "+
			"At most %d lines and %d MiB a call; more is refused whole (413), nothing written. Each line is stored or refused on its own: "+
			"the answer says, line by line, created, updated or refused and why, naming the field.", recipient.MaxImport, importMaxBytes>>20),
		Errors: []int{http.StatusRequestEntityTooLarge}}}, http.MethodPost, r.path+":import", r.write)
	o.MaxBodyBytes = importMaxBytes + 1
	huma.Register(s.api, o, func(ctx context.Context, in *importInput) (*bodyOf[recipient.ImportReport], error) {
		rep, err := call(ctx, s, r, in.Tenant, "", importTimeout, func(ctx context.Context, st resourceStore[string, recipient.Subscriber, recipient.Subscriber], tenant string) (recipient.ImportReport, error) {
			return s.importSubscribers(ctx, st.(subscribers).d, tenant, in.RawBody)
		})
		if err != nil {
			return nil, err
		}
		return &bodyOf[recipient.ImportReport]{Body: rep}, nil
	})
}

// importSubscribers imports body. A body over the bound is a 413; the
// store failing part way is logged, and the report says which lines were
// not stored.
func (s *Service) importSubscribers(ctx context.Context, d *recipient.Directory, tenant string, body []byte) (recipient.ImportReport, error) {
	rep, err := d.Import(ctx, tenant, body, nil)
	switch {
	case errors.Is(err, recipient.ErrTooManyLines):
		return rep, huma.Error413RequestEntityTooLarge(err.Error())
	case err != nil:
		s.cfg.Logger.WarnContext(ctx, "subscriber import stopped", "tenant", tenant, "error", err)
	}
	return rep, nil
}
