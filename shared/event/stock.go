package event

import "strings"

// StockData is the data of an inventory.* event: a stock level that needs
// attention and who must hear about it.
type StockData struct {
	Stock      Stock       `json:"stock"`
	Recipients []Recipient `json:"recipients"`
}

// Stock is the item and warehouse an inventory event concerns.
type Stock struct {
	SKU          string  `json:"sku"`
	Description  string  `json:"description,omitempty"`
	Warehouse    string  `json:"warehouse"`
	OnHand       Decimal `json:"on_hand"`
	ReorderPoint Decimal `json:"reorder_point,omitempty"`
	Unit         string  `json:"unit,omitempty"`
	Locale       string  `json:"locale,omitempty"`
}

// StockData decodes and validates the data of an inventory.* event.
func (ev Event) StockData() (StockData, error) {
	var p problems
	d, _ := ev.stockData(&p) // the zero value when it could not be decoded
	return d, p.err()
}

// stockData is StockData with its problems left in p; false when the data
// could not be decoded at all.
func (ev Event) stockData(p *problems) (StockData, bool) {
	var d StockData
	if !decodeData(ev, &d, p) {
		return StockData{}, false
	}
	if strings.TrimSpace(d.Stock.SKU) == "" {
		p.add("data.stock.sku", "is required")
	}
	if strings.TrimSpace(d.Stock.Warehouse) == "" {
		p.add("data.stock.warehouse", "is required")
	}
	checkText(p, "data.stock.sku", d.Stock.SKU)
	checkText(p, "data.stock.description", d.Stock.Description)
	checkText(p, "data.stock.warehouse", d.Stock.Warehouse)
	checkText(p, "data.stock.unit", d.Stock.Unit)
	checkText(p, "data.stock.locale", d.Stock.Locale)
	d.Stock.OnHand.check(p, "data.stock.on_hand", true)
	d.Stock.ReorderPoint.check(p, "data.stock.reorder_point", false)
	validateRecipients(p, d.Recipients)
	return d, true
}
