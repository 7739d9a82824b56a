//go:build ignore

// gen writes docs/api-reference.md; `go generate` runs it.
package main

import (
	"fmt"
	"os"

	"github.com/heraldhq/herald/services/api/internal/apidoc"
)

func main() {
	if err := apidoc.WritePage("."); err != nil {
		fmt.Fprintln(os.Stderr, "apidoc:", err)
		os.Exit(1)
	}
}
