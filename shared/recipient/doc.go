// Package recipient is the people and companies a tenant's notifications
// go to, as Herald keeps them — so that a publisher names who (its own
// user id, a company, a list) and Herald knows how to reach them, in which
// language and time zone, and what they agreed to receive:
//
//   - a Subscriber is one of a tenant's people, under the publisher's own
//     id: email, phone, WhatsApp number, locale, IANA time zone, free data;
//   - an Account is a company (a supplier, a customer, a warehouse) whose
//     members are subscribers in roles (sales, accounts_payable…);
//   - a Topic is a named list; its members are Memberships, one record
//     each, so a topic of 50,000 is 50,000 small records, never one large;
//   - Preferences are a subscriber's choices, category × channel, or a
//     tenant's defaults for every subscriber who has made none.
//
// Each is a tenant resource (shared/resource): validated, written by
// compare-and-set, listed, watched and audited like every other. Keys hold
// ids encoded (Token), since an id is opaque to Herald — any printable
// text up to 128 bytes, a '.', '*' or '>' in it included — and a KV key
// is not.
package recipient
