package notification

// The business documents Herald renders and delivers.
const (
	PurchaseOrder     = "purchase_order"
	SalesOrder        = "sales_order"
	DeliveryNote      = "delivery_note"
	GoodsReceivedNote = "goods_received_note"
	Invoice           = "invoice"
)

// DocumentTypes lists every business document type.
var DocumentTypes = []string{PurchaseOrder, SalesOrder, DeliveryNote, GoodsReceivedNote, Invoice}

// DocumentTitle is a document type's name in a language (en, es, ru),
// falling back to English for others.
func DocumentTitle(docType, locale string) string {
	if t := documentTitles[locale][docType]; t != "" {
		return t
	}
	return documentTitles["en"][docType]
}

var documentTitles = map[string]map[string]string{
	"en": {
		PurchaseOrder: "Purchase order", SalesOrder: "Sales order", DeliveryNote: "Delivery note",
		GoodsReceivedNote: "Goods received note", Invoice: "Invoice",
	},
	"es": {
		PurchaseOrder: "Pedido de compra", SalesOrder: "Pedido de venta", DeliveryNote: "Albarán",
		GoodsReceivedNote: "Nota de recepción", Invoice: "Factura",
	},
	"ru": {
		PurchaseOrder: "Заказ на закупку", SalesOrder: "Заказ покупателя", DeliveryNote: "Накладная",
		GoodsReceivedNote: "Акт приёмки", Invoice: "Счёт",
	},
}
