// Package documents is where business documents live between the renderer
// and the delivery workers: the render request a router publishes on
// docs.render.<doc_type>, the JetStream Object Store bucket "documents" that
// keeps each rendered PDF under <tenant>/<order>/<doc_type>-r<revision>.pdf
// with its SHA-256, and signed, expiring links that let a recipient fetch a
// document too large to attach.
package documents

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/nats-io/nats.go"
)

// Bucket is the object store declared in streams/OBJ_documents.
const Bucket = "documents"

// DefaultAttachMaxBytes is documents.attach_max_bytes unless configured:
// the largest document an email carries attached (a larger one goes as a
// signed link, or is refused where there is no text to put a link in).
const DefaultAttachMaxBytes = 5 << 20

// Request asks for one document to be rendered and stored, and carries the
// deliveries that wait for it: the renderer releases them to NOTIFY once
// the document exists, so nothing that carries a document leaves before it.
// Several requests may name the same document — parts of one large fan-out,
// or a later event adding recipients — and each releases its own deliveries.
type Request struct {
	Tenant     string                  `json:"tenant"`
	Type       string                  `json:"type"`
	Object     string                  `json:"object"`
	Locale     string                  `json:"locale"`
	Order      event.Order             `json:"order"`
	Date       time.Time               `json:"date"` // the event's time: the PDF's creation date
	Event      notification.EventRef   `json:"event"`
	Deliveries []notification.Delivery `json:"deliveries"`
}

// Subject is where a tenant's render requests for a document type are
// published: docs.render.<doc_type>.<tenant>, so that the renderer can
// serve tenants in turn (scheduling.fair) and refuse a request published
// under another tenant's name. Requests stored before the tenant token
// (docs.render.<doc_type>) are still rendered.
func Subject(docType, tenant string) string { return "docs.render." + docType + "." + tenant }

// MsgID deduplicates render requests by document and by the deliveries they
// carry (their dedupe keys, in any order): a redelivered or republished
// event asks again with the same id and DOCS keeps one request, while a
// request with other deliveries — a contact added without a new revision,
// another part of a large fan-out — is a new request and is stored.
func MsgID(req Request) string {
	keys := make([]string, len(req.Deliveries))
	for i, d := range req.Deliveries {
		keys[i] = d.DedupeKey
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
	}
	return "render:" + req.Object + ":" + hex.EncodeToString(h.Sum(nil)[:16])
}

// ObjectName is where a document revision is stored.
func ObjectName(tenant, orderID, docType string, revision int) string {
	return fmt.Sprintf("%s/%s/%s-r%d.pdf", tenant, orderID, docType, revision)
}

// Headroom is what a message body leaves of the connection's max payload
// for headers, which count toward it: the message's id and trace context
// and, should it be dead-lettered, the origin and reason (up to 1 KiB) its
// DLQ copy adds.
const Headroom = 8 << 10

// ErrTooLarge means a message can never be published: it exceeds the NATS
// max payload on its own. Retrying cannot change that.
var ErrTooLarge = errors.New("too large for the NATS max payload")

// Fit checks that a message body leaves Headroom within maxPayload; what
// names the message in the error.
func Fit(what string, body []byte, maxPayload int64) error {
	if int64(len(body)) > maxPayload-Headroom {
		return tooLarge(what, int64(len(body)), maxPayload)
	}
	return nil
}

// FitDeliveries makes each delivery into the message it is published as
// (notification.Msg) and checks that each fits maxPayload: the messages are
// what to publish (notification.PublishMsgs), encoded once.
func FitDeliveries(deliveries []notification.Delivery, maxPayload int64) ([]*nats.Msg, error) {
	msgs := make([]*nats.Msg, len(deliveries))
	for i, d := range deliveries {
		msg, err := notification.Msg(d)
		if err != nil {
			return nil, fmt.Errorf("delivery %s: %w", d.ID, err)
		}
		if err := Fit("delivery "+d.ID, msg.Data, maxPayload); err != nil {
			return nil, err
		}
		msgs[i] = msg
	}
	return msgs, nil
}

func tooLarge(what string, size, maxPayload int64) error {
	return fmt.Errorf("%w: %s is %d bytes; a max payload of %d leaves %d after headers",
		ErrTooLarge, what, size, maxPayload, maxPayload-Headroom)
}

// Split divides a request into parts that each fit maxPayload (see Fit):
// the same document, each part with some of its deliveries. Which part a
// delivery joins depends on its dedupe key and the number of parts only,
// not on byte counts that change when an event is republished (its id, the
// time it was planned): the same deliveries split the same way, so the
// parts keep their MsgIDs and DOCS drops the repeats. It fails with
// ErrTooLarge when the request with a single delivery does not fit.
func Split(req Request, maxPayload int64) ([]Request, error) {
	bare := req
	bare.Deliveries = []notification.Delivery{}
	body, err := json.Marshal(bare)
	if err != nil {
		return nil, fmt.Errorf("render request %s: %w", req.Object, err)
	}
	base := int64(len(body)) // with "[]" for the deliveries
	sizes := make([]int64, len(req.Deliveries))
	hashes := make([]uint64, len(req.Deliveries))
	for i, d := range req.Deliveries {
		b, err := json.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("render request %s: %w", req.Object, err)
		}
		if base+int64(len(b)) > maxPayload-Headroom {
			return nil, tooLarge("render request "+req.Object+" with a single delivery", base+int64(len(b)), maxPayload)
		}
		sum := sha256.Sum256([]byte(d.DedupeKey))
		sizes[i], hashes[i] = int64(len(b)), binary.BigEndian.Uint64(sum[:8])
	}
	if len(req.Deliveries) == 0 {
		return []Request{req}, nil
	}
	for n := 1; n <= len(req.Deliveries); n *= 2 {
		if parts, ok := spread(req, n, hashes, sizes, maxPayload-Headroom-base); ok {
			return parts, nil
		}
	}
	// Hashes that keep colliding: one part per delivery, each fits alone.
	parts := make([]Request, len(req.Deliveries))
	for i, d := range req.Deliveries {
		parts[i] = req
		parts[i].Deliveries = []notification.Delivery{d}
	}
	return parts, nil
}

// spread deals the deliveries into n parts by their key's hash, keeping
// their order within a part, and reports whether each part's deliveries fit
// in room bytes.
func spread(req Request, n int, hashes []uint64, sizes []int64, room int64) ([]Request, bool) {
	used := make([]int64, n)
	parts := make([]Request, n)
	for i, d := range req.Deliveries {
		p := hashes[i] % uint64(n)
		used[p] += sizes[i] + 1 // and a comma
		if used[p]-1 > room {
			return nil, false
		}
		if parts[p].Deliveries == nil {
			parts[p] = req
			parts[p].Deliveries = nil
		}
		parts[p].Deliveries = append(parts[p].Deliveries, d)
	}
	return slices.DeleteFunc(parts, func(r Request) bool { return len(r.Deliveries) == 0 }), true
}

// BelongsTo says whether an object is one of tenant's documents: its name's
// first segment is the tenant (see ObjectName). A message naming another
// tenant's object must not render over it or send it anywhere.
func BelongsTo(object, tenant string) bool {
	owner, rest, ok := strings.Cut(object, "/")
	return ok && tenant != "" && owner == tenant && rest != ""
}
