package recipient

import (
	"encoding/base64"
	"fmt"

	"github.com/heraldhq/herald/shared/event"
)

// MaxID is the longest id, in bytes, of a subscriber, account or topic.
const MaxID = event.MaxRecipientID

// CheckID says what keeps id from being a subscriber's, an account's or a
// topic's id: empty, longer than MaxID bytes, not UTF-8, or holding a
// character that is not printable (a control, a format character, a
// separator other than the space). Nil when nothing does. It is the event
// package's rule, so an event can name every record kept here.
func CheckID(id string) error { return event.CheckRecipientID(id) }

// Token is id as one token of a KV key: unpadded base64url, which holds
// nothing a subject treats specially ('.', '*', '>', a space), so an id
// never reaches another record's key, or another tenant's.
func Token(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

// FromToken is the id a Token encodes.
func FromToken(token string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", fmt.Errorf("recipient: %q is not an id's token: %w", token, err)
	}
	return string(b), nil
}
