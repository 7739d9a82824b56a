package recipient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/resource"
)

// Devices are the tenant's subscriber's push devices, in the order of
// their ids (not of their keys: base64url does not keep it); none for a subscriber without any (or without a
// record: the push channel asks for a subscriber an event named).
func (d *Directory) Devices(ctx context.Context, tenant, subscriber string) ([]Device, error) {
	keys, err := d.DeviceStore.KeysUnder(ctx, DevicesPrefix(tenant, subscriber))
	if err != nil {
		return nil, err
	}
	out := make([]Device, 0, len(keys))
	for _, k := range keys {
		v, _, err := d.DeviceStore.Get(ctx, k)
		if errors.Is(err, resource.ErrNotFound) {
			continue // removed since it was listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Device) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// PutDevice stores dev (stamped now) under its subscriber, replacing the
// device of that id, and says whether it is new. It refuses, naming the
// field, a device that does not validate and a new one past MaxDevices;
// and a subscriber the tenant does not have, ErrNoSubscriber.
func (d *Directory) PutDevice(ctx context.Context, dev Device) (Device, bool, error) {
	dev.UpdatedAt = time.Now().UTC()
	if err := dev.Validate(); err != nil {
		return dev, false, err
	}
	if _, _, err := d.Subscribers.Get(ctx, SubscriberKey(dev.Tenant, dev.Subscriber)); err != nil {
		return dev, false, err
	}
	keys, err := d.DeviceStore.KeysUnder(ctx, DevicesPrefix(dev.Tenant, dev.Subscriber))
	if err != nil {
		return dev, false, err
	}
	created := !slices.Contains(keys, DeviceKey(dev.Tenant, dev.Subscriber, dev.ID))
	if created && len(keys) >= MaxDevices {
		return dev, false, invalid(fmt.Sprintf("id: the subscriber has %d devices, the most one may have (%d); remove one first",
			len(keys), MaxDevices))
	}
	_, err = d.DeviceStore.Put(ctx, dev)
	return dev, created, err
}

// RemoveDevice removes the tenant's subscriber's device. ErrNoDevice
// (which matches resource.ErrNotFound) when she has none of that id: the
// API answers it 404; the push channel, removing a device its push
// service says is gone, takes it as done.
func (d *Directory) RemoveDevice(ctx context.Context, tenant, subscriber, id string) error {
	return d.DeviceStore.Delete(ctx, DeviceKey(tenant, subscriber, id))
}

// DeleteSubscriber deletes the tenant's subscriber's profile and her push
// devices — a device outliving its subscriber would still be pushed to.
// Her preferences, memberships and place in accounts stay (Erase removes
// those). The devices go first: stopped part way, she is still there to
// delete again. ErrNoSubscriber when the tenant has no such subscriber.
func (d *Directory) DeleteSubscriber(ctx context.Context, tenant, id string) error {
	if _, _, err := d.Subscribers.Get(ctx, SubscriberKey(tenant, id)); err != nil {
		return err
	}
	if _, err := d.DeviceStore.DeleteUnder(ctx, DevicesPrefix(tenant, id)); err != nil {
		return err
	}
	return d.Subscribers.Delete(ctx, SubscriberKey(tenant, id))
}
