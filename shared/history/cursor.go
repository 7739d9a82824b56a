package history

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"time"
)

// A cursor is where the previous page ended — its last row's created_at
// and id — and a digest of the query it belongs to, base64url-encoded:
//
//	version (1 byte) | digest (8) | created_at µs (8, big-endian) | id
//
// The digest binds it to one tenant and one set of filters: continuing
// "failed only" with a cursor from "all", or another tenant's, would skip
// or repeat rows silently, so it is refused. It is no secret and no
// signature — the listing is scoped by tenant whatever the cursor says.
const cursorVersion = 1

const cursorHead = 1 + 8 + 8

// position is a row's place in the newest-first order.
type position struct {
	created time.Time
	id      string
}

// digest identifies the query's tenant and filters (not its page size,
// which may change from page to page).
func (q Query) digest() []byte {
	parts := []string{q.Tenant, q.Order, recipientKey(q.Recipient), q.State}
	// The time range only when set, so that a cursor given before there
	// was one still continues its listing.
	if !q.Since.IsZero() || !q.Until.IsZero() {
		parts = append(parts, "created", stampOf(q.Since), stampOf(q.Until))
	}
	return digestOf(parts)
}

// digestOf is the first 8 bytes of the SHA-256 of parts, each
// length-prefixed, so that no two different lists hash alike.
func digestOf(parts []string) []byte {
	h := sha256.New()
	for _, part := range parts {
		_ = binary.Write(h, binary.BigEndian, uint32(len(part)))
		h.Write([]byte(part))
	}
	return h.Sum(nil)[:8]
}

// stampOf is a bound of the time range in µs, "" when unset.
func stampOf(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMicro(), 10)
}

func encodeCursor(at position, digest []byte) string {
	b := make([]byte, 0, cursorHead+len(at.id))
	b = append(b, cursorVersion)
	b = append(b, digest...)
	b = binary.BigEndian.AppendUint64(b, uint64(at.created.UnixMicro()))
	b = append(b, at.id...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor given for the query whose digest is given:
// ErrBadCursor if it is not one encodeCursor made for that query.
func decodeCursor(s string, digest []byte) (position, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) <= cursorHead || b[0] != cursorVersion {
		return position{}, ErrBadCursor
	}
	if !bytes.Equal(b[1:9], digest) {
		return position{}, ErrBadCursor
	}
	micros := int64(binary.BigEndian.Uint64(b[9:17]))
	return position{created: time.UnixMicro(micros).UTC(), id: string(b[cursorHead:])}, nil
}
