package recipient

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/shared/resource"
)

// ErrInvalid is what every refusal of a record matches (resource.ErrInvalid
// too); its message names each field at fault.
var ErrInvalid = errors.New("recipient: invalid")

type invalid string

func (e invalid) Error() string        { return string(e) }
func (e invalid) Is(target error) bool { return target == ErrInvalid || target == resource.ErrInvalid }

// problems gathers what is wrong with a record, field by field.
type problems []string

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, field+": "+fmt.Sprintf(format, args...))
}

func (p *problems) check(field string, err error) {
	if err != nil {
		p.add(field, "%v", err)
	}
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return invalid(strings.Join(p, "; "))
}

// maxQuoted bounds how much of a value an error repeats.
const maxQuoted = 64

// quote repeats a value in an error, Go-quoted and cut short.
func quote(s string) string {
	if len(s) > maxQuoted {
		s = s[:maxQuoted] + "…"
	}
	return strconv.Quote(s)
}
