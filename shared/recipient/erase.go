package recipient

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/resource"
)

// Erased counts what Directory.Erase removed of a subscriber.
type Erased struct {
	// Profile is 1 when the bucket kept any revision of the profile — a
	// profile deleted before (DELETE without erase) still kept its earlier
	// revisions — and 0 when it kept none.
	Profile int `json:"profile"`
	// Preferences is 1 when the subscriber had made choices.
	Preferences int `json:"preferences"`
	// TopicMemberships counts the topics she was on (or had been on, and
	// whose records the bucket still kept).
	TopicMemberships int `json:"topic_memberships"`
	// Accounts counts the accounts rewritten without her, and those
	// deleted before whose kept revisions named her, purged.
	Accounts int `json:"accounts"`
	// Devices counts her push devices (and those removed before whose
	// records the bucket still kept): a device token reaches her phone.
	Devices int `json:"devices"`
}

// Addresses are every address the bucket keeps for a tenant's subscriber:
// her email, phone and WhatsApp number now, and those of the earlier
// revisions it still keeps (an address she changed; a profile deleted
// without erasure). None when it keeps no revision. Emails are lowercased,
// as Normalize keeps them.
func (d *Directory) Addresses(ctx context.Context, tenant, id string) ([]string, error) {
	kept, err := d.Subscribers.Revisions(ctx, SubscriberKey(tenant, id))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range kept {
		s = s.Normalize()
		for _, ch := range []event.Channel{event.ChannelEmail, event.ChannelSMS, event.ChannelWhatsApp} {
			if a := s.Address(ch); a != "" && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out, nil
}

// Erase removes a tenant's subscriber from the directory, each record with
// every revision its bucket keeps (Purge): her push devices, her topic memberships, her
// preferences, her place in each account (the account rewritten without
// her, its earlier revisions gone), then her profile — last, so that an
// erasure cut short can be run again and still find her addresses
// (Addresses). With keepAddresses the profile is deleted but its kept
// revisions stay, for Addresses to read when the erasure is run again to
// complete it (her address is still to be redacted where it could not be
// yet). Erasing a subscriber the tenant does not have (or no longer has)
// erases whatever is left under her id, and is no error.
func (d *Directory) Erase(ctx context.Context, tenant, id string, keepAddresses bool) (Erased, error) {
	if err := CheckID(id); err != nil {
		return Erased{}, invalid("id: " + err.Error())
	}
	var e Erased
	var err error
	if e.Devices, err = purgeAll(ctx, d.DeviceStore, tenant, Token(id)+".*"); err != nil {
		return e, err
	}
	if e.TopicMemberships, err = purgeAll(ctx, d.Memberships, tenant, "*."+Token(id)); err != nil {
		return e, err
	}
	if e.Preferences, err = purgeOne(ctx, d.Preferences, PreferencesKey(tenant, id)); err != nil {
		return e, err
	}
	if e.Accounts, err = d.leaveAccounts(ctx, tenant, id); err != nil {
		return e, err
	}
	if keepAddresses {
		e.Profile, err = deleteOne(ctx, d.Subscribers, SubscriberKey(tenant, id))
		return e, err
	}
	e.Profile, err = purgeOne(ctx, d.Subscribers, SubscriberKey(tenant, id))
	return e, err
}

// deleteOne deletes the record at key, keeping its earlier revisions, and
// counts it if there was one.
func deleteOne[T any](ctx context.Context, store *resource.Store[T], key string) (int, error) {
	err := store.Delete(ctx, key)
	if errors.Is(err, resource.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return 1, nil
}

// purgeAll purges the tenant's keys of store that pattern matches, and
// counts those that kept anything.
func purgeAll[T any](ctx context.Context, store *resource.Store[T], tenant, pattern string) (int, error) {
	keys, err := store.Match(ctx, tenant, pattern)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		found, err := purgeOne(ctx, store, k)
		if err != nil {
			return n, err
		}
		n += found
	}
	return n, nil
}

func purgeOne[T any](ctx context.Context, store *resource.Store[T], key string) (int, error) {
	found, err := store.Purge(ctx, key)
	if err != nil || !found {
		return 0, err
	}
	return 1, nil
}

// leaveAccounts takes the subscriber out of every account of the tenant
// that names her in a revision its bucket keeps: a live account is
// rewritten without her and its earlier revisions dropped (Replace); one
// deleted before is purged. It counts the accounts changed.
func (d *Directory) leaveAccounts(ctx context.Context, tenant, id string) (int, error) {
	keys, err := d.Accounts.Match(ctx, tenant, "*")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		changed, err := d.leaveAccount(ctx, k, id)
		if err != nil {
			return n, err
		}
		if changed {
			n++
		}
	}
	return n, nil
}

func (d *Directory) leaveAccount(ctx context.Context, key, id string) (bool, error) {
	kept, err := d.Accounts.Revisions(ctx, key)
	if err != nil {
		return false, err
	}
	if !slices.ContainsFunc(kept, func(a Account) bool { return slices.Contains(a.In(nil), id) }) {
		return false, nil
	}
	live := false
	_, err = d.Accounts.Patch(ctx, key, func(a *Account, found bool) (resource.Write, error) {
		live = found
		if !found {
			return resource.Skip, nil
		}
		a.Members = slices.DeleteFunc(a.Members, func(m Member) bool { return m.Subscriber == id })
		return resource.Replace, nil
	})
	if err != nil {
		return false, fmt.Errorf("recipient: taking a subscriber out of account %s: %w", key, err)
	}
	if !live {
		_, err = d.Accounts.Purge(ctx, key)
	}
	return true, err
}
