// Package examples holds sample events in the documented format, embedded
// so `herald dev` can print a ready-to-paste publish command.
package examples

import "embed"

// Events holds events/*.json.
//
//go:embed events/*.json
var Events embed.FS
