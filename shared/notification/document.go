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
