// Package notification is the message between Herald's router and its
// delivery workers: one Delivery per recipient per channel, published on
// notify.<channel>.<priority>.<tenant> with Nats-Msg-Id set to its dedupe key.
//
// The dedupe key is tenant:order:revision:document:channel:recipient. It is
// the identity of a notification: a redelivered or republished event yields
// the same keys (and so nothing new), an edited order (next revision) or a
// different document yields new ones.
package notification
