package documents

import (
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"time"

	"github.com/heraldhq/herald/shared/notification"
)

// Handler serves GET /v1/documents/{name...}?expires=…&signature=…: the
// document when the link is valid, 403 when it is expired or altered, 404
// when the document is gone.
func Handler(store *Store, signer *Signer, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		q := r.URL.Query()
		if err := signer.Verify(name, q.Get("expires"), q.Get("signature"), time.Now()); err != nil {
			http.Error(w, "this link is invalid or has expired", http.StatusForbidden)
			return
		}
		pdf, err := store.Get(r.Context(), notification.Document{Object: name})
		switch {
		case errors.Is(err, ErrNotFound):
			http.Error(w, "no such document", http.StatusNotFound)
			return
		case err != nil:
			logger.ErrorContext(r.Context(), "serving a document", "object", name, "error", err)
			http.Error(w, "the document cannot be read right now", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/pdf")
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(name)}))
		w.Header().Set("Cache-Control", "private, no-store")
		_, _ = w.Write(pdf)
	})
}
