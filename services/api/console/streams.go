package console

import (
	"net/http"

	"github.com/heraldhq/herald/streams"
)

// streamsView is each declared stream and consumer against the server, as
// `herald streams apply --dry-run` reports it.
type streamsView struct {
	Report  streams.Report
	Drifted int
}

func (c *Console) streamsPage(w http.ResponseWriter, r *http.Request, ses *session) {
	report, err := streams.Check(r.Context(), c.js, c.cfg.Streams)
	if err != nil {
		c.cfg.Logger.Warn("console: checking the streams", "error", err)
		c.fail(w, r, ses, http.StatusServiceUnavailable, "The streams cannot be read right now.")
		return
	}
	c.render(w, http.StatusOK, "streams.html", view{Title: "Streams", Nav: "streams", Session: ses,
		Data: streamsView{Report: report, Drifted: report.Drifted()}})
}
