package render

import (
	"maps"
	"math/big"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/money"
)

// language picks the document's language: the locale's base language
// ("es" of "es-MX") when there are labels for it, else English.
func language(locale string) string {
	base, _, _ := strings.Cut(strings.ToLower(strings.ReplaceAll(strings.TrimSpace(locale), "_", "-")), "-")
	if _, ok := texts[base]; ok {
		return base
	}
	return "en"
}

// labels are the words a document prints besides the order's own data.
type labels struct {
	number, revision, date           string
	buyer, supplier, taxID           string
	sku, description, quantity, unit string
	unitPrice, taxRate, amount       string
	net, tax, gross                  string
	page                             string // maroto's pattern: {current} and {total}
}

// all is every label, for the glyph check.
func (l labels) all() []string {
	return []string{
		l.number, l.revision, l.date, l.buyer, l.supplier, l.taxID, l.sku, l.description,
		l.quantity, l.unit, l.unitPrice, l.taxRate, l.amount, l.net, l.tax, l.gross, l.page,
	}
}

var texts = map[string]labels{
	"en": {
		number: "No.", revision: "rev.", date: "Date",
		buyer: "Buyer", supplier: "Supplier", taxID: "Tax ID",
		sku: "SKU", description: "Description", quantity: "Qty", unit: "Unit",
		unitPrice: "Unit price", taxRate: "Tax", amount: "Amount",
		net: "Net", tax: "Tax", gross: "Total",
		page: "Page {current} of {total}",
	},
	"es": {
		number: "N.º", revision: "rev.", date: "Fecha",
		buyer: "Comprador", supplier: "Proveedor", taxID: "Id. fiscal",
		sku: "Ref.", description: "Descripción", quantity: "Cant.", unit: "Ud.",
		unitPrice: "Precio unitario", taxRate: "Impuesto", amount: "Importe",
		net: "Base", tax: "Impuestos", gross: "Total",
		page: "Página {current} de {total}",
	},
	"ru": {
		number: "№", revision: "ред.", date: "Дата",
		buyer: "Покупатель", supplier: "Поставщик", taxID: "ИНН",
		sku: "Артикул", description: "Наименование", quantity: "Кол-во", unit: "Ед.",
		unitPrice: "Цена", taxRate: "Налог", amount: "Сумма",
		net: "Без налога", tax: "Налог", gross: "Итого",
		page: "Страница {current} из {total}",
	},
}

// numberFormat is a language's way with numbers: money and figures as
// shared/money writes them (so a figure reads the same in the mail and the
// PDF), plus percentages and dates.
type numberFormat struct {
	money.Style
	percentSep string // between the number and "%", as CLDR writes it
	date       string
}

var numberFormats = map[string]numberFormat{
	"en": {Style: money.StyleOf("en"), percentSep: "", date: time.DateOnly},
	"es": {Style: money.StyleOf("es"), percentSep: "\u00a0", date: "02/01/2006"},
	"ru": {Style: money.StyleOf("ru"), percentSep: "\u00a0", date: "02.01.2006"},
}

// currencySymbols are money's, less "₽": the Go fonts have no glyph for it,
// so roubles are written "RUB".
var currencySymbols = func() map[string]string {
	m := maps.Clone(money.Symbols)
	delete(m, "RUB")
	return m
}()

func (f numberFormat) number(plain string, minFrac int) string { return f.Number(plain, minFrac) }

// money writes an amount with its currency: "€1,234.50", "1.234,50 €".
func (f numberFormat) money(plain, currency string) string {
	return f.Money(plain, currency, currencySymbols)
}

// percent writes a rate given as a fraction ("0.10") as "10 %".
func (f numberFormat) percent(rate decimal) string {
	p := decimal{unscaled: rate.unscaled, scale: rate.scale - 2}
	return f.number(p.trim().String(), 0) + f.percentSep + "%"
}

// decimal is an exact number: unscaled × 10^-scale. Money never meets a
// float here.
type decimal struct {
	unscaled *big.Int
	scale    int
}

func parseDecimal(d event.Decimal) (decimal, bool) {
	if !d.Valid() {
		return decimal{}, false
	}
	s := string(d)
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	u, ok := new(big.Int).SetString(whole+frac, 10)
	if !ok {
		return decimal{}, false
	}
	if neg {
		u.Neg(u)
	}
	return decimal{unscaled: u, scale: len(frac)}, true
}

func (d decimal) mul(e decimal) decimal {
	return decimal{unscaled: new(big.Int).Mul(d.unscaled, e.unscaled), scale: d.scale + e.scale}
}

var ten = big.NewInt(10)

func pow10(n int) *big.Int { return new(big.Int).Exp(ten, big.NewInt(int64(n)), nil) }

// round to places fraction digits, half away from zero (1.005 → 1.01,
// -1.005 → -1.01), the rounding invoices use.
func (d decimal) round(places int) decimal {
	if d.scale <= places {
		return decimal{unscaled: new(big.Int).Mul(d.unscaled, pow10(places-d.scale)), scale: places}
	}
	div := pow10(d.scale - places)
	q, r := new(big.Int).QuoRem(new(big.Int).Abs(d.unscaled), div, new(big.Int))
	if r.Lsh(r, 1).Cmp(div) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if d.unscaled.Sign() < 0 {
		q.Neg(q)
	}
	return decimal{unscaled: q, scale: places}
}

// trim drops trailing fraction zeros, and brings a negative scale (from
// shifting the point right) back to zero.
func (d decimal) trim() decimal {
	u, scale := new(big.Int).Set(d.unscaled), d.scale
	if scale < 0 {
		return decimal{unscaled: u.Mul(u, pow10(-scale)), scale: 0}
	}
	r := new(big.Int)
	for scale > 0 {
		q, _ := new(big.Int).QuoRem(u, ten, r)
		if r.Sign() != 0 {
			break
		}
		u, scale = q, scale-1
	}
	return decimal{unscaled: u, scale: scale}
}

// String is the plain form: optional minus, digits, "." and scale digits.
func (d decimal) String() string {
	digits := new(big.Int).Abs(d.unscaled).String()
	sign := ""
	if d.unscaled.Sign() < 0 {
		sign = "-"
	}
	if d.scale <= 0 {
		return sign + digits + strings.Repeat("0", -d.scale)
	}
	if pad := d.scale + 1 - len(digits); pad > 0 {
		digits = strings.Repeat("0", pad) + digits
	}
	return sign + digits[:len(digits)-d.scale] + "." + digits[len(digits)-d.scale:]
}

// lineTotal is quantity × unit price, exact, then rounded to the
// currency's minor unit.
func lineTotal(quantity, unitPrice decimal, currency string) decimal {
	return quantity.mul(unitPrice).round(money.Decimals(currency))
}
