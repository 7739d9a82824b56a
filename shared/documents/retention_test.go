package documents_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/documents"
)

// The retention sweep reads whose document an object is, and of which
// order and type, from its name; a name ObjectName did not write is no
// tenant's.
func TestParseObjectName(t *testing.T) {
	t.Parallel()
	tenant, order, docType, ok := documents.ParseObjectName(documents.ObjectName("acme", "PO/2026/7", "purchase_order", 12))
	require.True(t, ok)
	require.Equal(t, []string{"acme", "PO/2026/7", "purchase_order"}, []string{tenant, order, docType})
	for _, name := range []string{"acme/PO-1", "acme/PO-1/purchase_order.pdf", "acme/PO-1/purchase_order-rx.pdf",
		"/PO-1/invoice-r1.pdf", "acme//invoice-r1.pdf", "acme/PO-1/invoice-r1.txt", "acme/PO-1/-r1.pdf"} {
		_, _, _, ok := documents.ParseObjectName(name)
		require.False(t, ok, name)
	}
}
