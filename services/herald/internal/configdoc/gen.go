//go:build ignore

// gen writes docs/CONFIGURATION.md; `go generate` runs it.
package main

import (
	"fmt"
	"os"

	"github.com/heraldhq/herald/services/herald/internal/configdoc"
)

func main() {
	if err := configdoc.WritePage("."); err != nil {
		fmt.Fprintln(os.Stderr, "configdoc:", err)
		os.Exit(1)
	}
}
