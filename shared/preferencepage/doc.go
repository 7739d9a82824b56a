// Package preferencepage is the hosted preference page: the signed link
// every message to a subscriber carries (an email's footer, a text
// message's last line), and the page it leads to, where the subscriber
// chooses which categories of notifications reach them on which channel.
//
// A link names a tenant and one of its subscribers, signed with
// HMAC-SHA256 under a key derived from the document links' secret with a
// label of its own, so that neither a document link's nor an unsubscribe
// link's signature is ever a preference link's. It does not expire: a
// message is read long after it was sent. The page is in the subscriber's
// language (English, Spanish, Russian; English for any other), works
// without JavaScript (a plain form POST), is not indexed or cached, and
// saves through recipient.Directory.SetPreferences — the API's own write
// path, which refuses to switch off a required category. A GET only
// shows: link scanners fetch every link in a message and must change
// nothing. A link that is altered, another deployment's, or a subscriber
// the tenant does not have (erased, never created) answer the same 404.
package preferencepage
