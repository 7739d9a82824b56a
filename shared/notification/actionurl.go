package notification

import (
	"errors"
	"fmt"
	"net/url"
)

// MaxActionURL is the longest action URL a notification carries, in
// bytes: a link longer than a browser's address bar comfortably holds is
// not a link a notification should carry, and neither the inbox's store
// nor a push service bounds it for us.
const MaxActionURL = 2048

// errActionURL says what an action URL must be. The link itself is not
// repeated: it may carry what its template put in it.
var errActionURL = errors.New("the action URL must be an absolute http or https URL")

// CheckActionURL says why raw is not a link an inbox item or a push may
// open: absolute http(s), at most MaxActionURL bytes. Anything else
// (javascript:, a relative path) an app would run or resolve against
// itself. Empty is no link, and fine.
func CheckActionURL(raw string) error {
	if raw == "" {
		return nil
	}
	if len(raw) > MaxActionURL {
		return fmt.Errorf("the action URL is %d bytes; at most %d", len(raw), MaxActionURL)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errActionURL
	}
	return nil
}
