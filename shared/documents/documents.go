// Package documents is where business documents live between the renderer
// and the delivery workers: the render request a router publishes on
// docs.render.<doc_type>, the JetStream Object Store bucket "documents" that
// keeps each rendered PDF under <tenant>/<order>/<doc_type>-r<revision>.pdf
// with its SHA-256, and signed, expiring links that let a recipient fetch a
// document too large to attach.
package documents

import (
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// Bucket is the object store declared in streams/OBJ_documents.
const Bucket = "documents"

// Request asks for one document to be rendered and stored, and carries the
// deliveries that wait for it: the renderer releases them to NOTIFY once
// the document exists, so nothing that carries a document leaves before it.
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

// Subject is where render requests for a document type are published.
func Subject(docType string) string { return "docs.render." + docType }

// MsgID deduplicates render requests: one per document and revision.
func MsgID(object string) string { return "render:" + object }

// ObjectName is where a document revision is stored.
func ObjectName(tenant, orderID, docType string, revision int) string {
	return fmt.Sprintf("%s/%s/%s-r%d.pdf", tenant, orderID, docType, revision)
}

// BelongsTo says whether an object is one of tenant's documents: its name's
// first segment is the tenant (see ObjectName). A message naming another
// tenant's object must not render over it or send it anywhere.
func BelongsTo(object, tenant string) bool {
	owner, rest, ok := strings.Cut(object, "/")
	return ok && tenant != "" && owner == tenant && rest != ""
}
