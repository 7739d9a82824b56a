package resource_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/resource"
)

// Subscriber is a tenant's resource: a type, its validation, and a Kind
// saying where it is kept.
type Subscriber struct {
	Tenant string `json:"tenant"`
	ID     string `json:"id"`
	Email  string `json:"email"`
}

// Validate says what is wrong with s, naming the field.
func (s Subscriber) Validate() error {
	if s.Email == "" {
		return errors.New("email: required")
	}
	return nil
}

var Subscribers = resource.Kind[Subscriber]{Name: "subscriber", Bucket: "subscribers",
	Key:      func(s Subscriber) string { return s.Tenant + "." + s.ID },
	Validate: Subscriber.Validate, MaxBytes: 16 << 10, MaxPerTenant: 100_000}

func ExampleStore() {
	ctx := context.Background()
	js, stop := startNATS() // Herald's own: heraldtest.StartNATSWithStreams, or the binary's connection
	defer stop()
	// The bucket is declared in streams/KV_subscribers; here, by hand.
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "subscribers", History: 5}); err != nil {
		panic(err)
	}

	subscribers, err := resource.Open(ctx, js, Subscribers)
	if err != nil {
		panic(err)
	}
	ctx = resource.WithActor(ctx, "api:key_1") // who makes the changes below
	_, err = subscribers.Create(ctx, Subscriber{Tenant: "acme", ID: "ada"})
	fmt.Println("refused:", err)
	_, _ = subscribers.Create(ctx, Subscriber{Tenant: "acme", ID: "ada", Email: "ada@acme.example"})
	_, err = subscribers.Create(ctx, Subscriber{Tenant: "acme", ID: "ada", Email: "ada@other.example"})
	fmt.Println("again:", errors.Is(err, resource.ErrExists))

	s, rev, _ := subscribers.Get(ctx, "acme.ada")
	s.Email = "ada@lovelace.example"
	_, _ = subscribers.Update(ctx, s, rev)
	_, err = subscribers.Update(ctx, s, rev) // the revision read is not the latest any more
	fmt.Println("stale:", errors.Is(err, resource.ErrConflict))

	page, next, _ := subscribers.List(ctx, "acme", resource.Page{Limit: 10})
	fmt.Println("listed:", page, "more:", next != "")
	changes, _ := subscribers.Changes(ctx, "acme.ada")
	fmt.Println("changes:", len(changes), "by", changes[len(changes)-1].Actor)
	// Output:
	// refused: email: required
	// again: true
	// stale: true
	// listed: [{acme ada ada@lovelace.example}] more: false
	// changes: 2 by api:key_1
}

func startNATS() (jetstream.JetStream, func()) {
	dir, err := os.MkdirTemp("", "resource-example")
	if err != nil {
		panic(err)
	}
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: dir})
	if err != nil {
		panic(err)
	}
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		panic(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		panic(err)
	}
	return js, func() { nc.Close(); srv.Shutdown(); _ = os.RemoveAll(dir) }
}
