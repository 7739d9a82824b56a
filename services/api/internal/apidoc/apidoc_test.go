package apidoc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/api/internal/apidoc"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

func TestAPIReferenceIsCurrent(t *testing.T) {
	t.Parallel()
	raw, err := apidoc.Document()
	require.NoError(t, err)
	page, err := apidoc.Page(raw)
	require.NoError(t, err)
	committed, err := os.ReadFile(filepath.Join("..", "..", "..", "..", filepath.FromSlash(apidoc.File)))
	require.NoError(t, err)
	got, want := strings.Split(string(committed), "\n"), strings.Split(string(page), "\n")
	for i := range max(len(got), len(want)) {
		require.Equal(t, line(want, i), line(got, i),
			"%s line %d differs from the API's OpenAPI document: run `%s`", apidoc.File, i+1, apidoc.RegenerateCommand)
	}
}

// line is lines[i], or "" past the end.
func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

// A small document shows what the page says of an operation: its scope,
// its parameters, its body's fields, its answers, and the schemas named.
func TestPageDescribesEachOperation(t *testing.T) {
	t.Parallel()
	page, err := apidoc.Page([]byte(`{
	  "info": {"title": "Herald", "version": "1.0.0", "description": "The API."},
	  "components": {
	    "securitySchemes": {"bearer": {"description": "An API key."}},
	    "schemas": {
	      "Widget": {"type": "object", "required": ["name"], "properties": {
	        "name": {"type": "string", "description": "Its name, a|b.", "maxLength": 64},
	        "parts": {"type": ["array", "null"], "items": {"$ref": "#/components/schemas/Part"}},
	        "size": {"type": "integer", "enum": [1, 2], "default": 1}}},
	      "Part": {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}}},
	      "ErrorModel": {"type": "object", "properties": {"title": {"type": "string"}}}
	    }
	  },
	  "paths": {"/v1/widgets/{id}": {"put": {
	    "summary": "Store a widget", "description": "Stores <one> widget.", "tags": ["Widgets"],
	    "security": [{"bearer": ["send"]}],
	    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "description": "Its id."}}],
	    "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Widget"}}}},
	    "responses": {
	      "200": {"description": "OK", "headers": {"Link": {"schema": {"type": "string", "description": "The next page."}}},
	        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Widget"}}}},
	      "503": {"description": "Service Unavailable", "headers": {"Retry-After": {"description": "Seconds to wait."}},
	        "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/ErrorModel"}}}}
	    }
	  }}}
	}`))
	require.NoError(t, err)
	for _, want := range []string{
		"| [Widgets](#widgets) | [`PUT /v1/widgets/{id}`](#put-v1widgetsid) | Store a widget | `send` |",
		"### PUT /v1/widgets/{id}\n\n**Store a widget** · key with scope `send`\n\nStores &lt;one&gt; widget.\n",
		"| `id` | path | string | yes | Its id. |",
		"Request body (required): `application/json`: [Widget](#widget-schema).",
		"| `name` | string | yes | Its name, a\\|b. At most 64 characters. |",
		"| `parts` | list of [Part](#part-schema) or null | no |  |",
		"| `size` | integer | no | One of `1`, `2`. Default `1`. |",
		"| `200` | OK | `Link`: The next page. | [Widget](#widget-schema) |",
		"[Errors](#errors): `503`.",
		"| `503` | Service Unavailable | `Retry-After`: Seconds to wait. | `application/problem+json` [ErrorModel](#errormodel-schema) |",
		"### Part schema\n\n| Field | Type | Required | Description |\n| --- | --- | --- | --- |\n| `id` | string (uuid) | no |  |",
	} {
		require.Contains(t, string(page), want)
	}
}
