// Package configdoc writes docs/CONFIGURATION.md, the configuration
// reference, from the Go source of Herald's config structs: it starts at
// app.Config, follows every field the YAML file can set into the structs of
// other packages, and takes each key's meaning and default from the field's
// doc comment, and its environment variable or flag from main's loadConfig.
// A key without a doc comment is an error, so the reference cannot fall
// behind the code: TestConfigurationPage fails, naming the key.
//
// Regenerate the page after changing a config struct:
//
//	go generate ./services/herald/internal/configdoc/
package configdoc

//go:generate go run gen.go
