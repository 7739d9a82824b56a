package apns

import (
	"errors"
	"fmt"
	"regexp"
)

// maxTokenLength bounds a device token. Apple's are 64 hex digits today
// and Apple warns they may grow, so the bound is generous.
const maxTokenLength = 200

// tokenPattern is a device token's shape: hex digits, which also keeps
// anything else out of the request path it is put in.
var tokenPattern = regexp.MustCompile(`^[0-9a-fA-F]+$`)

// ValidateToken checks an APNs device token before it is stored or sent
// to. Its errors never quote the token.
func ValidateToken(token string) error {
	switch {
	case token == "":
		return errors.New("the device token is required")
	case len(token) > maxTokenLength:
		return fmt.Errorf("the device token is longer than %d characters", maxTokenLength)
	case !tokenPattern.MatchString(token):
		return errors.New("the device token is not hexadecimal")
	}
	return nil
}
