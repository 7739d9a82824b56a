package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/heraldhq/herald/shared/event"
)

// table prints rows as aligned columns: every table the CLI prints. Each
// cell is made printable (event.Printable) first. What a table shows comes
// from tenants, providers and dead letters, and a control character in a
// cell would act on the operator's terminal — clear it, retitle it, move
// the cursor — or break the columns, as a tab or a newline would.
type table struct{ tw *tabwriter.Writer }

// newTable starts a table on w, with header as its first row if given.
func newTable(w io.Writer, header ...any) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

// row prints one row, each cell as fmt.Sprint writes it.
func (t *table) row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			_, _ = io.WriteString(t.tw, "\t")
		}
		_, _ = io.WriteString(t.tw, event.Printable(fmt.Sprint(c)))
	}
	_, _ = io.WriteString(t.tw, "\n")
}

// flush writes the table out, aligned.
func (t *table) flush() error { return t.tw.Flush() }
