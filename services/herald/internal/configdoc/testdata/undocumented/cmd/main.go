// Command cmd reads the configuration.
package main

import (
	"os"

	"example.com/undocumented/app"
)

func main() { _ = loadConfig() }

func loadConfig() app.Config {
	var cfg app.Config
	if v := os.Getenv("LISTEN"); v != "" {
		cfg.Server.Listen = os.Getenv("LISTEN")
	}
	return cfg
}
