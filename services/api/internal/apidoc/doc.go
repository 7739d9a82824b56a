// Package apidoc writes docs/api-reference.md, the HTTP API reference, from
// the OpenAPI document Herald serves at /v1/openapi.json: it builds the API
// as the service does (api.New, with its default configuration), asks its
// handler for the document and renders every operation — grouped by tag,
// with its scope, parameters, request body and answers — and every schema
// they name. The page is the document's words, so it cannot fall behind
// the routes: TestAPIReferenceIsCurrent fails when it differs, naming the
// first line that does.
//
// Regenerate the page after changing a route or a type it answers with:
//
//	go generate ./services/api/internal/apidoc/
package apidoc

//go:generate go run gen.go
