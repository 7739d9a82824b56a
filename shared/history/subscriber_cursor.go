package history

import (
	"bytes"
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// A subscriber listing's cursor is the id the previous page ended on and
// the digest of its query, base64url-encoded:
//
//	version (1 byte) | digest (8) | id
//
// Refused, as a notification cursor is, when given with another tenant or
// other filters, or altered.
const afterVersion = 1

const afterHead = 1 + 8

func encodeAfter(id string, digest []byte) string {
	b := make([]byte, 0, afterHead+len(id))
	b = append(b, afterVersion)
	b = append(b, digest...)
	b = append(b, id...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeAfter reads a cursor given for the query whose digest is given:
// ErrBadCursor if it is not one encodeAfter made for that query. The
// digest is no signature, so the id is checked too: text a database
// would refuse to compare is a bad cursor, not the index's failure.
func decodeAfter(s string, digest []byte) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) <= afterHead || b[0] != afterVersion || !bytes.Equal(b[1:afterHead], digest) {
		return "", ErrBadCursor
	}
	id := string(b[afterHead:])
	if !utf8.ValidString(id) || strings.ContainsRune(id, 0) {
		return "", ErrBadCursor
	}
	return id, nil
}
