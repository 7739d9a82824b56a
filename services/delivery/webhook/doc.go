// Package webhook holds the webhook channel's provider building blocks, per
// the Standard Webhooks specification (https://www.standardwebhooks.com):
// the signature header (Sign; secrets come from shared/webhooks), an
// HTTP client that will not be turned against Herald's own network
// (NewClient), and a Sender that posts one signed message and classifies the
// answer as the provider package says.
//
// A webhook URL is the tenant's input, and often a credential: endpoints
// embed tokens in the path or query. So errors, logs and receipts name the
// endpoint's host and never its path, query or user information; and the
// client refuses, at connect time, any address inside a private network.
//
// How an answer is classified follows the specification's "delivery success
// and failure" section:
//
//   - 2xx: delivered. The receipt's message id is the webhook-id Herald sent:
//     an endpoint gives no id of its own.
//   - 3xx: permanent. Redirects are never followed (following them doubles
//     the load and would let an endpoint point Herald anywhere); an endpoint
//     that redirects is misconfigured until its URL is updated.
//   - 410 Gone: permanent, wrapping ErrGone: the endpoint wants no more
//     webhooks, and the caller should disable it.
//   - anything else: as provider.HTTPError says (other 4xx permanent; 408,
//     429 and 5xx transient), with the Retry-After the endpoint gave, on a
//     503 as on a 429.
package webhook
