// Package resource keeps tenant-scoped records in a JetStream key-value
// bucket: a tenant's sending domains, suppressed addresses, templates,
// webhook endpoints — and whatever resource comes next. A resource is a
// type and a Kind, which says where its records are kept and what a
// valid one is; Open gives the store that reads and writes them.
//
//	var Notes = resource.Kind[Note]{Name: "note", Bucket: "notes",
//		Key:      func(n Note) string { return n.Tenant + "." + n.ID },
//		Validate: Note.Validate, MaxBytes: 4 << 10, MaxPerTenant: 1000}
//
//	notes, err := resource.Open(ctx, js, Notes)
//	rev, err := notes.Create(ctx, Note{Tenant: "acme", ID: "n1", Text: "hello"}) // ErrExists if there
//	n, rev, err := notes.Get(ctx, "acme.n1")                                      // the kind's NotFound if not
//	n.Text = "hello again"
//	rev, err = notes.Update(ctx, n, rev)                                          // ErrConflict if changed since
//	page, next, err := notes.List(ctx, "acme", resource.Page{Limit: 50})          // the tenant's own, by key
//	err = notes.Delete(ctx, "acme.n1")
//
// What every kind gets:
//
//   - Validation: a record is written only once the kind's Validate and
//     MaxBytes (its size as stored) pass it, and a tenant's new record only
//     while it has fewer than MaxPerTenant.
//   - Compare-and-set: Get returns a revision, Update writes only at that
//     revision, Create only where no record is, and Patch reads, edits and
//     writes again until no other writer came between. Put is the write
//     where the last writer wins.
//   - Listing per tenant, a page at a time, from the tenant's own keys
//     only: a key is "<tenant>.<…>", and a tenant that is not one key token
//     is refused, never read as a wildcard.
//   - A watched cache (Watch): every record in memory, kept current, for
//     the paths that ask per message.
//   - An audit trail: every write records who made it (WithActor) beside
//     the revision, and Changes lists a key's revisions the bucket keeps —
//     what was done, by whom, when.
//
// The Kind's Key is the format data is kept in: a package moving its
// records onto a store keeps its key function, and what it wrote before
// reads as it did.
package resource
