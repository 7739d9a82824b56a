// Package render turns an order into the PDF of a business document
// (purchase order, sales order, delivery note, goods received note,
// invoice). It is pure: no I/O and no clock, so the same Input always gives
// the same bytes, and renders may run in parallel.
package render

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/johnfercher/maroto/v2"
	"github.com/johnfercher/maroto/v2/pkg/config"
	"github.com/johnfercher/maroto/v2/pkg/consts/pagesize"
	"github.com/johnfercher/maroto/v2/pkg/core"
	"github.com/johnfercher/maroto/v2/pkg/core/entity"
	"github.com/johnfercher/maroto/v2/pkg/props"
	"github.com/phpdave11/gofpdf"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/money"
	"github.com/heraldhq/herald/shared/notification"
)

// Input is everything a document is made from.
type Input struct {
	// DocumentType is one of notification.DocumentTypes.
	DocumentType string
	Order        event.Order
	// Locale is the document's language: en, es or ru. A regional variant
	// ("es-MX") uses its base language; others fall back to English.
	// Empty means the order's own locale.
	Locale string
	// Date is written as the PDF's creation date: pass the event's time
	// (zero means the order's IssuedAt). It is also the printed date when
	// the order has no IssuedAt.
	Date time.Time
}

// InputError says why an input cannot make a correct document. Retrying
// will not help: the input has to change.
type InputError struct {
	Problems []string
}

func (e *InputError) Error() string {
	return "cannot render the document: " + strings.Join(e.Problems, "; ")
}

// Catalog sorting makes gofpdf write its fonts in a fixed order instead of
// Go's random map order, which would make two renders of one input differ.
// maroto offers no per-document switch, so the process default is set here,
// before any document can exist; it only orders resource dictionaries.
func init() { gofpdf.SetDefaultCatalogSort(true) }

// PDF renders the document. The same Input gives byte-identical output.
func PDF(in Input) ([]byte, error) {
	fs, err := loadFaces()
	if err != nil {
		return nil, err
	}
	d, err := newDocument(in, fs)
	if err != nil {
		return nil, err
	}
	cfg := d.config()
	m := maroto.New(cfg)
	// The same expression maroto uses for a page's usable height, so the
	// pager and maroto agree to the last bit on when a page is full.
	avail := cfg.Dimensions.Height - cfg.Margins.Top - cfg.Margins.Bottom
	d.layout(&pager{m: m, avail: avail})
	doc, err := m.Generate()
	if err != nil {
		return nil, fmt.Errorf("generating the PDF of %s %s: %w", in.DocumentType, in.Order.ID, err)
	}
	return fixModDate(doc.GetBytes(), d.created)
}

// document is an Input checked and turned into the strings to print.
type document struct {
	in      Input
	text    labels
	num     numberFormat
	title   string
	date    string
	created time.Time
	lines   []printedLine
	ms      *measurer
}

type printedLine struct {
	sku, description, quantity, unit, unitPrice, taxRate, total string
}

// newDocument checks in and turns it into the strings to print; every
// problem found is reported at once, each naming its field.
func newDocument(in Input, fs *faces) (*document, error) {
	locale := in.Locale
	if strings.TrimSpace(locale) == "" {
		locale = in.Order.Locale
	}
	lang := language(locale)
	d := &document{
		in:    in,
		text:  texts[lang],
		num:   numberFormats[lang],
		title: notification.DocumentTitle(in.DocumentType, lang),
		ms:    &measurer{faces: fs},
	}
	var p problems
	if !slices.Contains(notification.DocumentTypes, in.DocumentType) {
		p.add("document type", "%q is not one of %s", in.DocumentType, strings.Join(notification.DocumentTypes, ", "))
	}
	d.setDates(&p)
	d.checkHeading(&p)
	d.printLines(&p)
	p.amount("data.order.totals.net", in.Order.Totals.Net, true)
	p.amount("data.order.totals.tax", in.Order.Totals.Tax, true)
	p.amount("data.order.totals.gross", in.Order.Totals.Gross, true)
	if len(p) > 0 {
		return nil, &InputError{Problems: p}
	}
	return d, nil
}

// problems collects what is wrong with an input.
type problems []string

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, field+": "+fmt.Sprintf(format, args...))
}

// amount parses the decimal of field, noting it if it is missing (and
// required) or malformed; ok is false when there is none to print.
func (p *problems) amount(field string, v event.Decimal, required bool) (n decimal, ok bool) {
	if v == "" && !required {
		return decimal{}, false
	}
	n, ok = parseDecimal(v)
	switch {
	case v == "":
		p.add(field, "is required")
	case !ok:
		p.add(field, "%q is not a decimal such as \"183.48\"", string(v))
	}
	return n, ok
}

// setDates sets the PDF's creation date (the input's date, else the
// order's) and the date printed (the order's, else the input's).
func (d *document) setDates(p *problems) {
	o := d.in.Order
	d.created = d.in.Date
	if d.created.IsZero() {
		d.created = o.IssuedAt
	}
	switch {
	case d.created.IsZero():
		p.add("date", "is required: it is the PDF's creation date, which keeps the output reproducible")
	case d.created.UTC().Year() < 1 || d.created.UTC().Year() > 9999:
		p.add("date", "%s is outside the years 1 to 9999 a PDF date can hold", d.created)
	}
	// PDF dates carry no zone: UTC makes one instant one set of bytes.
	d.created = d.created.UTC()
	printed := o.IssuedAt
	if printed.IsZero() {
		printed = d.in.Date
	}
	d.date = printed.Format(d.num.date)
}

// glyphs notes the first character of s (field) the document font cannot
// draw: a PDF that silently drops it would misstate the document.
func (d *document) glyphs(p *problems, field, s string) {
	if r, missing := d.ms.faces.missingGlyph(&d.ms.buf, s); missing {
		p.add(field, "%q (%U) has no glyph in the document font", string(r), r)
	}
}

// checkHeading checks what the page prints above the lines: the title and
// labels, the order's id and currency, and the two parties.
func (d *document) checkHeading(p *problems) {
	o := d.in.Order
	d.glyphs(p, "document title", d.title)
	for _, l := range d.text.all() {
		d.glyphs(p, "label", l)
	}
	if strings.TrimSpace(o.ID) == "" {
		p.add("data.order.id", "is required")
	}
	if strings.TrimSpace(o.Currency) == "" {
		p.add("data.order.currency", "is required")
	}
	d.glyphs(p, "data.order.id", o.ID)
	d.glyphs(p, "data.order.currency", o.Currency)
	for _, party := range []struct {
		field string
		party event.Party
	}{{"data.order.buyer", o.Buyer}, {"data.order.supplier", o.Supplier}} {
		d.glyphs(p, party.field+".name", party.party.Name)
		d.glyphs(p, party.field+".tax_id", party.party.TaxID)
		d.glyphs(p, party.field+".address", party.party.Address)
	}
}

// printLines checks the order's lines and formats each for the table, its
// total computed from quantity and unit price.
func (d *document) printLines(p *problems) {
	currency := d.in.Order.Currency
	for i, l := range d.in.Order.Lines {
		field := fmt.Sprintf("data.order.lines[%d]", i)
		d.glyphs(p, field+".sku", l.SKU)
		d.glyphs(p, field+".description", l.Description)
		d.glyphs(p, field+".unit", l.Unit)
		q, qok := p.amount(field+".quantity", l.Quantity, true)
		price, pok := p.amount(field+".unit_price", l.UnitPrice, true)
		rate, rok := p.amount(field+".tax_rate", l.TaxRate, false)
		pl := printedLine{sku: l.SKU, description: l.Description, unit: l.Unit, taxRate: "—"}
		if qok {
			pl.quantity = d.num.number(string(l.Quantity), 0)
		}
		if pok {
			pl.unitPrice = d.num.number(string(l.UnitPrice), money.Decimals(currency))
		}
		if qok && pok {
			pl.total = d.num.number(lineTotal(q, price, currency).String(), 0)
		}
		if rok {
			pl.taxRate = d.num.percent(rate)
		}
		d.lines = append(d.lines, pl)
	}
}

// Page geometry in mm. The grid has one unit per mm of usable width, so a
// column's size is its width.
const (
	marginTop    = 12.0
	marginSide   = 10.0
	marginBottom = 15.0
	gridWidth    = 190
)

func (d *document) config() *entity.Config {
	return config.NewBuilder().
		WithPageSize(pagesize.A4).
		WithTopMargin(marginTop).
		WithLeftMargin(marginSide).
		WithRightMargin(marginSide).
		WithBottomMargin(marginBottom).
		WithMaxGridSize(gridWidth).
		// One goroutine per render: parallelism belongs to the caller,
		// and concurrent mode would merge pages through pdfcpu.
		WithSequentialMode().
		WithCompression(true).
		WithCustomFonts(customFonts()).
		WithDefaultFont(&props.Font{Family: family, Size: bodySize, Color: &black}).
		WithPageNumber(props.PageNumber{Pattern: d.text.page, Place: props.RightBottom, Size: 8, Color: &grey}).
		WithTitle(d.title+" "+d.in.Order.ID, true).
		WithCreator("Herald", false).
		WithCreationDate(d.created).
		Build()
}

// fixModDate makes /ModDate the creation date. gofpdf writes it from the
// wall clock and maroto cannot set it. Both are "D:" and 14 digits, so the
// rewrite is in place and every xref offset stays valid. The info
// dictionary is the last place gofpdf writes a date, hence LastIndex.
func fixModDate(pdf []byte, created time.Time) ([]byte, error) {
	key := []byte("/ModDate (D:")
	stamp := created.Format("20060102150405")
	at := bytes.LastIndex(pdf, key)
	if at < 0 {
		return nil, errors.New("the generated PDF has no /ModDate, so it cannot be made reproducible")
	}
	old := pdf[at+len(key):]
	if len(old) <= len(stamp) || old[len(stamp)] != ')' || strings.Trim(string(old[:len(stamp)]), "0123456789") != "" {
		return nil, errors.New("the generated PDF's /ModDate is not in the form gofpdf writes, so it cannot be made reproducible")
	}
	copy(old, stamp)
	return pdf, nil
}

// pager places blocks on pages itself, rather than leaving it to maroto,
// so that it knows where each page starts and can repeat the running head
// and the table header there.
type pager struct {
	m      core.Maroto
	avail  float64
	used   float64
	repeat []func() block // printed at the top of every further page
}

func (p *pager) fits(b block) bool { return p.used+b.height() <= p.avail }

func (p *pager) add(b block) {
	if !p.fits(b) && b.height() <= p.avail-p.repeatHeight() {
		p.newPage()
	}
	// A block taller than a page flows row by row: nothing is clipped.
	for i, r := range b.rows {
		if p.used+b.heights[i] > p.avail {
			p.newPage()
		}
		p.m.AddRows(r)
		p.used += b.heights[i]
	}
}

func (p *pager) newPage() {
	var rows []core.Row
	p.used = 0
	for _, f := range p.repeat {
		b := f()
		rows = append(rows, b.rows...)
		for _, h := range b.heights {
			p.used += h
		}
	}
	p.m.AddPages(newPage(rows))
}

func (p *pager) repeatHeight() float64 {
	h := 0.0
	for _, f := range p.repeat {
		h += f().height()
	}
	return h
}
