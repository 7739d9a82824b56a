package render

import (
	"strconv"

	"github.com/johnfercher/maroto/v2/pkg/components/col"
	"github.com/johnfercher/maroto/v2/pkg/components/page"
	"github.com/johnfercher/maroto/v2/pkg/components/row"
	"github.com/johnfercher/maroto/v2/pkg/components/text"
	"github.com/johnfercher/maroto/v2/pkg/consts/align"
	"github.com/johnfercher/maroto/v2/pkg/consts/border"
	"github.com/johnfercher/maroto/v2/pkg/consts/fontstyle"
	"github.com/johnfercher/maroto/v2/pkg/core"
	"github.com/johnfercher/maroto/v2/pkg/props"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

const (
	bodySize  = 9.0
	smallSize = 8.0
	// cellPad keeps text off a table cell's edges; wrapSlack absorbs the
	// rounding between our width sums and gofpdf's, so maroto never has
	// to break a line we already broke.
	cellPad   = 1.0
	wrapSlack = 0.5
)

var (
	black    = props.Color{}
	grey     = props.Color{Red: 100, Green: 100, Blue: 100}
	rule     = props.Color{Red: 180, Green: 180, Blue: 180}
	headFill = props.Color{Red: 232, Green: 232, Blue: 232}
)

// Table column widths in mm; they add up to gridWidth.
const (
	wSKU, wDescription, wQuantity, wUnit, wPrice, wTax, wTotal = 26, 62, 18, 14, 24, 16, 30
)

// block is rows that belong together (one table line, one field of both
// parties), each one text line high, so a page can end between any two.
type block struct {
	rows    []core.Row
	heights []float64
}

func (b block) height() float64 {
	h := 0.0
	for _, x := range b.heights {
		h += x
	}
	return h
}

func join(bs ...block) block {
	var out block
	for _, b := range bs {
		out.rows = append(out.rows, b.rows...)
		out.heights = append(out.heights, b.heights...)
	}
	return out
}

// cell is one column of a grid: its width in mm and what it says.
type cell struct {
	width int
	text  string
	bold  bool
	size  float64
	right bool
	color *props.Color
}

type gridStyle struct {
	pad               float64 // left and right, inside each cell
	padTop, padBottom float64
	fill              *props.Color
	ruleBelow         bool
}

func fontMM(size float64) float64 { return size * 25.4 / 72 }

// grid lays cells side by side, wraps each to its width, and returns one
// row per text line so that a page break can fall inside a tall cell.
func (d *document) grid(cells []cell, st gridStyle) block {
	wrapped := make([][]string, len(cells))
	n, biggest := 1, 0.0
	for i, c := range cells {
		f := d.ms.faces.regular
		if c.bold {
			f = d.ms.faces.bold
		}
		wrapped[i] = d.ms.wrap(f, c.text, c.size, float64(c.width)-2*st.pad-wrapSlack)
		n = max(n, len(wrapped[i]))
		biggest = max(biggest, c.size)
	}
	lineHeight := fontMM(biggest) * 1.3
	var b block
	for j := range n {
		h, top := lineHeight, 0.05*fontMM(biggest)
		if j == 0 {
			h += st.padTop
			top += st.padTop
		}
		if j == n-1 {
			h += st.padBottom
		}
		cols := make([]core.Col, len(cells))
		for i, c := range cells {
			cols[i] = col.New(c.width)
			if j >= len(wrapped[i]) || wrapped[i][j] == "" {
				continue
			}
			style, place := fontstyle.Normal, align.Left
			if c.bold {
				style = fontstyle.Bold
			}
			if c.right {
				place = align.Right
			}
			color := c.color
			if color == nil {
				color = &black
			}
			cols[i].Add(text.New(wrapped[i][j], props.Text{
				// Smaller text shares the biggest text's baseline.
				Top:    top + fontMM(biggest) - fontMM(c.size),
				Left:   st.pad,
				Right:  st.pad,
				Family: family,
				Style:  style,
				Size:   c.size,
				Align:  place,
				Color:  color,
			}))
		}
		r := row.New(h).Add(cols...)
		cs := &props.Cell{BackgroundColor: st.fill}
		if st.ruleBelow && j == n-1 {
			cs.BorderType, cs.BorderColor, cs.BorderThickness = border.Bottom, &rule, 0.2
		}
		if cs.BackgroundColor != nil || cs.BorderType != border.None {
			r.WithStyle(cs)
		}
		b.rows = append(b.rows, r)
		b.heights = append(b.heights, h)
	}
	return b
}

func newPage(rows []core.Row) core.Page { return page.New().Add(rows...) }

// reference is "N.º PO-2026-0042, rev. 2".
func (d *document) reference() string {
	s := d.text.number + " " + d.in.Order.ID
	if r := d.in.Order.Revision; r > 0 {
		s += ", " + d.text.revision + " " + strconv.Itoa(r)
	}
	return s
}

func (d *document) layout(p *pager) {
	o := d.in.Order
	t := d.text

	p.add(d.grid([]cell{
		{width: 115, text: d.title, bold: true, size: 16},
		{width: 75, text: d.reference(), bold: true, size: 10, right: true},
	}, gridStyle{}))
	p.add(d.grid([]cell{
		{width: 115},
		{width: 75, text: t.date + ": " + d.date, size: bodySize, right: true},
	}, gridStyle{padBottom: 5}))

	// The issuer comes first, as on paper: the buyer issues purchase
	// orders and goods received notes, the supplier everything else.
	type side struct {
		label string
		party partyText
	}
	first, second := side{t.supplier, d.party(o.Supplier)}, side{t.buyer, d.party(o.Buyer)}
	if d.in.DocumentType == notification.PurchaseOrder || d.in.DocumentType == notification.GoodsReceivedNote {
		first, second = second, first
	}
	pair := func(a, b string, bold bool, size float64, color *props.Color, padBottom float64) {
		if a == "" && b == "" {
			return
		}
		p.add(d.grid([]cell{
			{width: 92, text: a, bold: bold, size: size, color: color},
			{width: 6},
			{width: 92, text: b, bold: bold, size: size, color: color},
		}, gridStyle{padBottom: padBottom}))
	}
	pair(first.label, second.label, true, smallSize, &grey, 0.5)
	pair(first.party.name, second.party.name, true, 10, nil, 0)
	pair(first.party.taxID, second.party.taxID, false, bodySize, nil, 0)
	pair(first.party.address, second.party.address, false, bodySize, nil, 0)
	p.add(block{rows: []core.Row{row.New(6)}, heights: []float64{6}})

	// A header alone at the foot of a page is useless: it travels with
	// the first line, or the first line starts a page, which brings its
	// own header.
	p.repeat = []func() block{d.runningHead, d.tableHeader}
	switch {
	case len(d.lines) == 0:
		p.add(d.tableHeader())
	case p.fits(join(d.tableHeader(), d.tableLine(d.lines[0]))):
		p.add(join(d.tableHeader(), d.tableLine(d.lines[0])))
	default:
		p.newPage()
		p.add(d.tableLine(d.lines[0]))
	}
	for _, l := range d.lines[min(1, len(d.lines)):] {
		p.add(d.tableLine(l))
	}
	p.repeat = []func() block{d.runningHead}

	total := func(label, value string, bold bool, padTop float64) block {
		return d.grid([]cell{
			{width: 110},
			{width: 45, text: label, bold: bold, size: bodySize, right: true},
			{width: 35, text: value, bold: bold, size: bodySize, right: true},
		}, gridStyle{pad: cellPad, padTop: padTop})
	}
	p.add(join(
		total(t.net, d.num.money(string(o.Totals.Net), o.Currency), false, 4),
		total(t.tax, d.num.money(string(o.Totals.Tax), o.Currency), false, 0),
		total(t.gross, d.num.money(string(o.Totals.Gross), o.Currency), true, 0),
	))
}

type partyText struct{ name, taxID, address string }

func (d *document) party(p event.Party) partyText {
	pt := partyText{name: p.Name, address: p.Address}
	if p.TaxID != "" {
		pt.taxID = d.text.taxID + ": " + p.TaxID
	}
	return pt
}

// runningHead names the document on every page after the first, so a
// loose page can still be put back where it belongs.
func (d *document) runningHead() block {
	return d.grid([]cell{
		{width: gridWidth, text: d.title + " " + d.reference(), size: smallSize, color: &grey},
	}, gridStyle{padBottom: 2})
}

func (d *document) tableHeader() block {
	t, cur := d.text, d.in.Order.Currency
	h := func(w int, s string, right bool) cell {
		return cell{width: w, text: s, bold: true, size: smallSize, right: right}
	}
	return d.grid([]cell{
		h(wSKU, t.sku, false),
		h(wDescription, t.description, false),
		h(wQuantity, t.quantity, true),
		h(wUnit, t.unit, false),
		h(wPrice, t.unitPrice+" ("+cur+")", true),
		h(wTax, t.taxRate, true),
		h(wTotal, t.amount+" ("+cur+")", true),
	}, gridStyle{pad: cellPad, padTop: 1, padBottom: 1, fill: &headFill})
}

func (d *document) tableLine(l printedLine) block {
	c := func(w int, s string, right bool) cell {
		return cell{width: w, text: s, size: bodySize, right: right}
	}
	return d.grid([]cell{
		c(wSKU, l.sku, false),
		c(wDescription, l.description, false),
		c(wQuantity, l.quantity, true),
		c(wUnit, l.unit, false),
		c(wPrice, l.unitPrice, true),
		c(wTax, l.taxRate, true),
		c(wTotal, l.total, true),
	}, gridStyle{pad: cellPad, padTop: 1, padBottom: 1, ruleBelow: true})
}
