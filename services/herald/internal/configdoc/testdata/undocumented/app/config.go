// Package app is a configuration with one key its author forgot to
// document.
package app

// Config is the file.
type Config struct {
	// Server is where the service listens.
	Server struct {
		// Listen is the address. Defaults to :8080.
		Listen  string `yaml:"listen"`
		Timeout int    `yaml:"timeout"`
	} `yaml:"server"`
}
