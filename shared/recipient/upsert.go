package recipient

import "context"

// UpsertAccount stores a as PutAccount does, and says whether the tenant
// had no account of its id before (resource.Store.Upsert).
func (d *Directory) UpsertAccount(ctx context.Context, a Account) (created bool, err error) {
	if a, err = d.checkAccount(ctx, a); err != nil {
		return false, err
	}
	return d.Accounts.Upsert(ctx, a)
}
