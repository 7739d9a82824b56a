package push

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/vault"
)

// Accounts are the tenants' own provider accounts (vault.Store).
type Accounts interface {
	List(ctx context.Context, tenant string) ([]vault.Info, error)
	Get(ctx context.Context, tenant, name string) (vault.Credential, error)
}

// accountKinds are the kind of device each push account type reaches.
var accountKinds = map[string]recipient.DeviceKind{
	vault.TypeFCM: recipient.DeviceFCM, vault.TypeAPNs: recipient.DeviceAPNs, vault.TypeWebPush: recipient.DeviceWebPush,
}

// TenantSenders picks, for each tenant and kind of device, the tenant's own
// push account of that kind when it has one (the first by name, if it has
// several), else the platform's sender: a tenant with its own APNs account
// and none for FCM sends to its Android devices through the platform's.
// Which accounts a tenant has is read at most once per ListTTL; a sender is
// built once per account revision, decrypted at the moment of use.
type TenantSenders struct {
	// Accounts holds the tenants' own accounts. Required.
	Accounts Accounts
	// Build makes a sender of tenant's fcm, apns or webpush account.
	// Required.
	Build func(ctx context.Context, tenant string, c vault.Credential) (Sender, error)
	// ListTTL is how long a tenant's list of accounts is reused: an
	// account added or removed is used, or left, within it. Defaults to 1
	// minute.
	ListTTL time.Duration
	// Now defaults to time.Now.
	Now func() time.Time

	mu    sync.Mutex
	lists map[string]accountList
	built map[string]map[recipient.DeviceKind]builtSender // by tenant
}

type accountList struct {
	byKind map[recipient.DeviceKind]vault.Info
	until  time.Time
}

// builtSender is a sender of one revision of an account: an account
// replaced (UpdatedAt moves on every Put) is built anew.
type builtSender struct {
	name     string
	revision time.Time
	sender   Sender
}

// choice is the sender for one kind of device, or why there is none.
type choice struct {
	sender NamedSender
	err    error
}

// senders are the tenant's senders for sends' kinds of device: its own
// accounts' over the platform's; an account of a kind no device has is
// left unopened. An error reading the tenant's accounts fails the whole
// call (it is transient: nothing was sent); one account that cannot be
// built fails only its kind's devices.
func (c *Channel) senders(ctx context.Context, tenant string, sends []send) (map[recipient.DeviceKind]choice, error) {
	out := make(map[recipient.DeviceKind]choice, len(c.cfg.Senders))
	for kind, s := range c.cfg.Senders {
		out[kind] = choice{sender: s}
	}
	t := c.cfg.Accounts
	if t == nil {
		return out, nil
	}
	own, err := t.list(ctx, tenant)
	if err != nil {
		return nil, err
	}
	for kind, info := range own {
		if !slices.ContainsFunc(sends, func(s send) bool { return s.device.Kind == kind }) {
			continue
		}
		s, err := t.sender(ctx, tenant, kind, info)
		switch {
		case errors.Is(err, vault.ErrNotFound): // removed since it was listed
		case err != nil:
			out[kind] = choice{err: err}
		default:
			out[kind] = choice{sender: s}
		}
	}
	return out, nil
}

func (t *TenantSenders) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// list is the tenant's push accounts by kind, read at most once per
// ListTTL.
func (t *TenantSenders) list(ctx context.Context, tenant string) (map[recipient.DeviceKind]vault.Info, error) {
	t.mu.Lock()
	l, ok := t.lists[tenant]
	t.mu.Unlock()
	if ok && t.now().Before(l.until) {
		return l.byKind, nil
	}
	infos, err := t.Accounts.List(ctx, tenant)
	if err != nil {
		return nil, fmt.Errorf("reading tenant %q's push accounts: %w", tenant, err)
	}
	byKind := map[recipient.DeviceKind]vault.Info{}
	for _, info := range infos { // by name: the first of a kind wins
		if kind, ok := accountKinds[info.Type]; ok && byKind[kind].Name == "" {
			byKind[kind] = info
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lists == nil {
		t.lists = map[string]accountList{}
	}
	t.lists[tenant] = accountList{byKind: byKind, until: t.now().Add(cmp.Or(t.ListTTL, time.Minute))}
	return byKind, nil
}

// sender is the sender of the tenant's account info, built once per
// revision of it.
func (t *TenantSenders) sender(ctx context.Context, tenant string, kind recipient.DeviceKind, info vault.Info) (NamedSender, error) {
	t.mu.Lock()
	b, ok := t.built[tenant][kind]
	t.mu.Unlock()
	if ok && b.name == info.Name && b.revision.Equal(info.UpdatedAt) {
		return NamedSender{Name: info.Name, Sender: b.sender}, nil
	}
	c, err := t.Accounts.Get(ctx, tenant, info.Name)
	if err != nil {
		return NamedSender{}, fmt.Errorf("reading tenant %q's %s account %q: %w", tenant, kind, info.Name, err)
	}
	s, err := t.Build(ctx, tenant, c)
	if err != nil {
		// The providers' errors name the field at fault, never its value.
		return NamedSender{}, provider.Permanent(fmt.Errorf("tenant %q's %s account %q: %w", tenant, kind, info.Name, err))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.built == nil {
		t.built = map[string]map[recipient.DeviceKind]builtSender{}
	}
	if t.built[tenant] == nil {
		t.built[tenant] = map[recipient.DeviceKind]builtSender{}
	}
	t.built[tenant][kind] = builtSender{name: info.Name, revision: info.UpdatedAt, sender: s}
	return NamedSender{Name: info.Name, Sender: s}, nil
}
