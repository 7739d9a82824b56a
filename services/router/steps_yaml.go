package router

// MarshalYAML writes the span as a person writes it ("2d", "90m", "36h"),
// which ParseDuration reads back: a workflow printed as YAML (`herald
// workflows show`) reads as it was written, not as Go's "48h0m0s".
func (d Duration) MarshalYAML() (any, error) { return d.short(), nil }
