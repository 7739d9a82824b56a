//go:build !linux

package heraldtest

// memDir is none outside Linux: stores go to t.TempDir().
func memDir() string { return "" }
