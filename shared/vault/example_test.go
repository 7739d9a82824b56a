package vault_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/heraldhq/herald/shared/vault"
)

// A credential shows its secrets as previews however it is printed; only
// Reveal gives the plaintext, to hand to a provider.
func ExampleSecret() {
	c := vault.Credential{Name: "sendgrid", Type: vault.TypeSendGrid, APIKey: vault.NewSecret("SG.example-api-key-0000-wxyz")}
	fmt.Printf("%v\n", c.APIKey)
	fmt.Printf("%#v\n", c.APIKey)
	b, _ := json.Marshal(c)
	fmt.Println(string(b))
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	logger.Info("stored", "api_key", c.APIKey)
	fmt.Println(len(c.APIKey.Reveal()))
	// Output:
	// ****wxyz
	// vault.Secret("****wxyz")
	// {"name":"sendgrid","type":"sendgrid","api_key":"****wxyz"}
	// level=INFO msg=stored api_key=****wxyz
	// 28
}
