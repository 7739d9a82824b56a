package inbox

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIndexRoundTripsAndRefusesWhatItDidNotWrite(t *testing.T) {
	t.Parallel()
	x := index{Counts: Counts{Unseen: 1, Unread: 2, Total: 2}, Change: change{Added: "b", Dropped: []string{"z"}},
		Items: []entry{{ID: "b", Created: 2, Rev: 9, Seen: -3}, {ID: "a.é", Created: 1, Rev: 4, Read: 5, Archived: 6}}}
	b, err := x.encode()
	require.NoError(t, err)
	got, err := decodeIndex(b)
	require.NoError(t, err)
	require.Equal(t, x, got)
	c, err := decodeCounts(b)
	require.NoError(t, err)
	require.Equal(t, x.Counts, c)

	huge := binary.AppendUvarint(append([]byte{indexVersion, 0, 0, 0, 2}, "{}"...), 1<<40)
	for name, bad := range map[string][]byte{
		"empty":           nil,
		"other version":   append([]byte{2}, b[1:]...),
		"truncated":       b[:len(b)-1],
		"trailing bytes":  append(b, 0),
		"a count too big": huge,
	} {
		_, err := decodeIndex(bad)
		require.ErrorIs(t, err, errIndexCorrupt, name)
	}
}
