package apidoc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/heraldhq/herald/services/api"
)

// document is the part of an OpenAPI 3.1 document the page shows.
type document struct {
	Info struct {
		Title, Version, Description string
	} `json:"info"`
	Paths      map[string]map[string]*operation `json:"paths"`
	Components struct {
		Schemas         map[string]*schema `json:"schemas"`
		SecuritySchemes map[string]struct {
			Description string `json:"description"`
		} `json:"securitySchemes"`
	} `json:"components"`
}

type operation struct {
	Summary     string                `json:"summary"`
	Description string                `json:"description"`
	Tags        []string              `json:"tags"`
	Security    []map[string][]string `json:"security"`
	Parameters  []parameter           `json:"parameters"`
	RequestBody *struct {
		Required bool                `json:"required"`
		Content  map[string]*content `json:"content"`
	} `json:"requestBody"`
	Responses map[string]*response `json:"responses"`
}

type parameter struct {
	Name        string  `json:"name"`
	In          string  `json:"in"`
	Description string  `json:"description"`
	Required    bool    `json:"required"`
	Schema      *schema `json:"schema"`
}

type content struct {
	Schema *schema `json:"schema"`
}

type response struct {
	Description string              `json:"description"`
	Headers     map[string]*header  `json:"headers"`
	Content     map[string]*content `json:"content"`
}

type header struct {
	Description string  `json:"description"`
	Schema      *schema `json:"schema"`
}

// schema is a JSON Schema, as much of it as a reader needs to write a
// request or read an answer.
type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 types              `json:"type"`
	Format               string             `json:"format"`
	ContentEncoding      string             `json:"contentEncoding"`
	Description          string             `json:"description"`
	Enum                 []any              `json:"enum"`
	Default              any                `json:"default"`
	Minimum              *float64           `json:"minimum"`
	Maximum              *float64           `json:"maximum"`
	MinLength            *int               `json:"minLength"`
	MaxLength            *int               `json:"maxLength"`
	MaxItems             *int               `json:"maxItems"`
	Pattern              string             `json:"pattern"`
	Items                *schema            `json:"items"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"`
	AnyOf                []*schema          `json:"anyOf"`
	OneOf                []*schema          `json:"oneOf"`
}

// types is a schema's type: one name, or several (["array", "null"]).
type types []string

func (t *types) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*t = types{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(t))
}

// refuseAll is the Authenticator of an API only asked for its document,
// which needs no key.
type refuseAll struct{}

func (refuseAll) Authenticate(context.Context, string) (api.Principal, error) {
	return api.Principal{}, api.ErrInvalidKey
}

// Document is the OpenAPI document Herald serves at /v1/openapi.json, as
// the API built with its default configuration serves it. The document is
// built when the API is, so no NATS is needed to ask for it.
func Document() ([]byte, error) {
	svc, err := api.New(nil, api.Config{Authenticator: refuseAll{}})
	if err != nil {
		return nil, fmt.Errorf("building the API: %w", err)
	}
	rec := httptest.NewRecorder()
	svc.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/openapi.json answered %d", rec.Code)
	}
	return rec.Body.Bytes(), nil
}

// parse reads an OpenAPI document.
func parse(raw []byte) (*document, error) {
	var doc document
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("reading the OpenAPI document: %w", err)
	}
	if len(doc.Paths) == 0 {
		return nil, errors.New("the OpenAPI document has no paths")
	}
	return &doc, nil
}
