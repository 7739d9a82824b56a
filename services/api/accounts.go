package api

import (
	"context"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/recipient"
	records "github.com/heraldhq/herald/shared/resource"
)

// Account is a company — a supplier, a customer, a warehouse — whose
// members are the tenant's subscribers, in roles.
type Account struct {
	Tenant string `json:"tenant"`
	ID     string `json:"id" example:"zarya"`
	AccountBody
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// AccountBody is an account as PUT writes it.
type AccountBody struct {
	Name string `json:"name,omitempty" example:"Zarya LLC"`
	// Not a maxItems: the store counts them, and its answer names the field.
	Members []AccountMember `json:"members" doc:"At most 500 (a longer list is a topic). Each is one of the tenant's subscribers."`
}

// AccountMember is a subscriber of an account, in roles.
type AccountMember struct {
	Subscriber string   `json:"subscriber" example:"u-olga" doc:"A subscriber's id; one the tenant does not have is refused (422)."`
	Roles      []string `json:"roles,omitempty" example:"[\"sales\"]" doc:"Lowercase letters, digits, '-' or '_' (sales, accounts_payable): an event naming the account with account_roles reaches the members in those. Without roles, a member is reached when an event names the account without account_roles."`
}

func accountOf(a recipient.Account) Account {
	members := make([]AccountMember, len(a.Members))
	for i, m := range a.Members {
		members[i] = AccountMember(m)
	}
	return Account{Tenant: a.Tenant, ID: a.ID, AccountBody: AccountBody{Name: a.Name, Members: members}, UpdatedAt: a.UpdatedAt}
}

type accountInput struct {
	WebhookTenant
	ID string `path:"id" doc:"The account's id. Any printable text up to 128 bytes, URL-escaped."`
}

func (in accountInput) key() string { return in.ID }

type putAccountInput struct {
	WebhookTenant
	ID   string `path:"id" doc:"The account's id. Any printable text up to 128 bytes, URL-escaped."`
	Body AccountBody
}

func (in putAccountInput) key() string { return in.ID }

func (in putAccountInput) record(tenant string) recipient.Account {
	a := recipient.Account{Tenant: tenant, ID: in.ID, Name: in.Body.Name, Members: make([]recipient.Member, len(in.Body.Members)),
		UpdatedAt: time.Now().UTC()}
	for i, m := range in.Body.Members {
		a.Members[i] = recipient.Member(m)
	}
	return a
}

// listInput of a tenant's own records, a page at a time.
type tenantPageInput struct {
	WebhookTenant
	PageQuery
}

func (tenantPageInput) key() string          { return "" }
func (in tenantPageInput) paging() PageQuery { return in.PageQuery }

type listAccountsOutputBody struct {
	Accounts   []Account `json:"accounts"`
	NextCursor string    `json:"next_cursor,omitempty" doc:"Pass as cursor= for the next page; absent on the last page."`
}

// tenantPrefix is the key prefix of a tenant's own records.
func tenantPrefix(tenant, _ string) string { return tenant }

func registerAccounts(s *Service) {
	r := &resource[string, recipient.Account, recipient.Account, Account]{
		what: "accounts", path: "/v1/accounts", item: "/{id}", tags: []string{"Accounts"},
		read: ScopeRead, write: ScopeSend,
		store: func(st *stores) (resourceStore[string, recipient.Account, recipient.Account], error) {
			return accounts{st.recipients}, nil
		},
		view:     accountOf,
		notFound: recipient.ErrNoAccount, invalid: records.ErrInvalid, conflict: records.ErrConflict,
		absent: func(tenant, id string) string { return "tenant " + tenant + " has no account " + quoted(id) },
		broken: "the accounts could not be read or written right now",
	}
	pagedRoute[tenantPageInput](s, r, route{Operation: huma.Operation{OperationID: "list-accounts",
		Summary: "List accounts", Description: "The tenant's accounts a page at a time, in the order of their ids' keys."}}, "", tenantPrefix,
		func(st resourceStore[string, recipient.Account, recipient.Account], ctx context.Context, tenant, _ string, p records.Page) ([]recipient.Account, string, error) {
			return st.(accounts).d.Accounts.List(ctx, tenant, p)
		}, accountOf, func(l []Account, next string) listAccountsOutputBody { return listAccountsOutputBody{l, next} })
	getRoute[accountInput](s, r, route{Operation: huma.Operation{OperationID: "get-account", Summary: "Get an account"}})
	upsertRoute[putAccountInput](s, r, route{Operation: huma.Operation{OperationID: "put-account",
		Summary: "Create or replace an account",
		Description: "Stores the company and its members in roles, replacing whatever it held. Every member must be one of the tenant's " +
			"subscribers: one that is not is refused (422, naming members[i].subscriber) and nothing is written. An account's members are " +
			"subscribers only, never accounts or topics, so no cycle can form."}})
	deleteRoute[accountInput](s, r, route{Operation: huma.Operation{OperationID: "delete-account",
		Summary: "Remove an account", Description: "Its members stay subscribers; events naming the account reach nobody through it."}})
}

// accounts is the account store as the API exposes it: put through the
// directory, which checks every member is a subscriber.
type accounts struct{ d *recipient.Directory }

func (st accounts) List(ctx context.Context, tenant string) ([]recipient.Account, error) {
	return st.d.Accounts.All(ctx, tenant)
}

func (st accounts) Get(ctx context.Context, tenant, id string) (recipient.Account, error) {
	v, _, err := st.d.Accounts.Get(ctx, recipient.AccountKey(tenant, id))
	return v, err
}

func (st accounts) Put(ctx context.Context, _ string, a recipient.Account) (recipient.Account, error) {
	_, err := st.d.PutAccount(ctx, a)
	return a.Normalize(), err
}

func (st accounts) Upsert(ctx context.Context, _ string, a recipient.Account) (recipient.Account, bool, error) {
	created, err := st.d.UpsertAccount(ctx, a)
	return a.Normalize(), created, err
}

func (st accounts) Delete(ctx context.Context, tenant, id string) error {
	return st.d.Accounts.Delete(ctx, recipient.AccountKey(tenant, id))
}
