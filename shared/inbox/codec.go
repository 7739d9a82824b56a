package inbox

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// The index is kept in a binary form: a first page decodes the whole index,
// and with a thousand entries JSON took milliseconds where this takes tens
// of microseconds. Layout: the version byte, the counts (unseen, unread,
// total as uvarints), the change (length-prefixed JSON: small, and read by
// the change log's followers), then the number of entries and each entry:
// its id (length-prefixed), created, seen, read and archived times (Unix
// nanoseconds as varints, zero for unset) and the contents' revision.
const indexVersion = 1

var errIndexCorrupt = errors.New("inbox: a feed's index is not in a form this version reads")

func (x *index) encode() ([]byte, error) {
	ch, err := json.Marshal(x.Change)
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	b := make([]byte, 0, 64+len(ch)+len(x.Items)*48)
	b = append(b, indexVersion)
	b = appendCounts(b, x.Counts)
	b = binary.AppendUvarint(b, uint64(len(ch)))
	b = append(b, ch...)
	b = binary.AppendUvarint(b, uint64(len(x.Items)))
	for _, e := range x.Items {
		b = binary.AppendUvarint(b, uint64(len(e.ID)))
		b = append(b, e.ID...)
		for _, t := range []int64{e.Created, e.Seen, e.Read, e.Archived} {
			b = binary.AppendVarint(b, t)
		}
		b = binary.AppendUvarint(b, e.Rev)
	}
	return b, nil
}

func appendCounts(b []byte, c Counts) []byte {
	for _, n := range []int{c.Unseen, c.Unread, c.Total} {
		b = binary.AppendUvarint(b, uint64(n))
	}
	return b
}

// reader reads the index's fields, remembering the first failure.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.bad, r.b = true, nil
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) counts() Counts {
	return Counts{Unseen: int(r.uvarint()), Unread: int(r.uvarint()), Total: int(r.uvarint())}
}

// header reads the version and the counts.
func header(b []byte) (*reader, Counts, error) {
	if len(b) == 0 || b[0] != indexVersion {
		return nil, Counts{}, errIndexCorrupt
	}
	r := &reader{b: b[1:]}
	c := r.counts()
	if r.bad {
		return nil, Counts{}, errIndexCorrupt
	}
	return r, c, nil
}

func decodeIndex(b []byte) (index, error) {
	var x index
	r, c, err := header(b)
	if err != nil {
		return x, err
	}
	x.Counts = c
	if err := json.Unmarshal(r.bytes(), &x.Change); err != nil || r.bad {
		return x, errIndexCorrupt
	}
	n := r.uvarint()
	if n > uint64(len(r.b)) { // each entry takes bytes: no huge allocation from a bad count
		return x, errIndexCorrupt
	}
	x.Items = make([]entry, n)
	for i := range x.Items {
		e := &x.Items[i]
		e.ID = string(r.bytes())
		e.Created, e.Seen, e.Read, e.Archived = r.varint(), r.varint(), r.varint(), r.varint()
		e.Rev = r.uvarint()
	}
	if r.bad || len(r.b) != 0 {
		return x, errIndexCorrupt
	}
	return x, nil
}

// decodeCounts reads the counts at the index's head and nothing after.
func decodeCounts(b []byte) (Counts, error) {
	_, c, err := header(b)
	return c, err
}
