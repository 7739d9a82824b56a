package inbox

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"
)

// Filter picks the items a page lists.
type Filter string

const (
	// All is every item not archived, the default.
	All      Filter = ""
	Unread   Filter = "unread"
	Unseen   Filter = "unseen"
	Read     Filter = "read"
	Archived Filter = "archived"
)

// ErrBadCursor is returned for a cursor List did not hand out.
var ErrBadCursor = errors.New("inbox: not a cursor of this feed")

// ErrBadFilter is returned for a state filter that is none of the above.
var ErrBadFilter = errors.New("inbox: state is one of unread, unseen, read, archived, or none for all")

const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// Query is one page's request.
type Query struct {
	// Cursor is the Next of the page before; empty for the first page.
	Cursor string
	// Limit is how many items a page holds. Defaults to DefaultLimit; at
	// most MaxLimit.
	Limit int
	State Filter
}

// Page is a page of items, newest first; Next is empty on the last page.
type Page struct {
	Items []Item
	Next  string
}

// List is a page of the subscriber's feed, newest first, from the cursor
// on. Only the page's contents are read, in one batch.
func (s *Store) List(ctx context.Context, tenant, sub string, q Query) (Page, error) {
	keep, err := q.State.match()
	if err != nil {
		return Page{}, err
	}
	after, err := decodeCursor(q.Cursor)
	if err != nil {
		return Page{}, err
	}
	limit := min(cmp.Or(q.Limit, DefaultLimit), MaxLimit)
	x, _, err := s.load(ctx, tenant, sub)
	if err != nil {
		return Page{}, err
	}
	entries, more := x.page(after, keep, limit)
	items, err := s.contents(ctx, tenant, sub, entries)
	if err != nil {
		return Page{}, err
	}
	p := Page{Items: items}
	if more {
		p.Next = encodeCursor(entries[len(entries)-1])
	}
	return p, nil
}

func (f Filter) match() (func(entry) bool, error) {
	switch f {
	case All:
		return func(e entry) bool { return e.Archived == 0 }, nil
	case Unread:
		return func(e entry) bool { return e.Archived == 0 && e.Read == 0 }, nil
	case Unseen:
		return func(e entry) bool { return e.Archived == 0 && e.Seen == 0 }, nil
	case Read:
		return func(e entry) bool { return e.Archived == 0 && e.Read != 0 }, nil
	case Archived:
		return func(e entry) bool { return e.Archived != 0 }, nil
	}
	return nil, ErrBadFilter
}

// page is up to limit entries that keep accepts after the cursor's place,
// and whether more follow.
func (x *index) page(after *entry, keep func(entry) bool, limit int) ([]entry, bool) {
	var out []entry
	for _, e := range x.Items {
		if after != nil && newerFirst(e, *after) <= 0 {
			continue
		}
		if !keep(e) {
			continue
		}
		if len(out) == limit {
			return out, true
		}
		out = append(out, e)
	}
	return out, false
}

// A cursor is the place of the last item of a page: its created time and
// id. It names a place, not an item, so an item dropped meanwhile does
// not break the next page.
func encodeCursor(e entry) string {
	raw := strconv.FormatInt(e.Created, 10) + "." + e.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func decodeCursor(c string) (*entry, error) {
	if c == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, ErrBadCursor
	}
	nanos, id, ok := strings.Cut(string(raw), ".")
	n, err := strconv.ParseInt(nanos, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, ErrBadCursor
	}
	return &entry{ID: id, Created: n}, nil
}

// contents reads the entries' items, a few at a time concurrently, and
// gives them the index's state. (A multi-subject direct get was one round
// trip but set up a subscription with a 512 KB buffer each time: slower.)
func (s *Store) contents(ctx context.Context, tenant, sub string, entries []entry) ([]Item, error) {
	items := make([]Item, len(entries))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, e := range entries {
		g.Go(func() error {
			kve, err := s.kv.Get(gctx, itemKey(tenant, sub, e.ID))
			if err != nil {
				return fmt.Errorf("inbox: reading item %s: %w", e.ID, err)
			}
			if err := json.Unmarshal(kve.Value(), &items[i]); err != nil {
				return fmt.Errorf("inbox: item %s: %w", e.ID, err)
			}
			items[i].CreatedAt, items[i].State = e.createdAt(), e.state()
			return nil
		})
	}
	return items, g.Wait()
}
