package streams

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

//go:embed */stream.json */consumers/*.json
var files embed.FS

// Stream is one declared stream and the consumers declared on it.
type Stream struct {
	File      string // path inside streams/, e.g. ORDERS/stream.json
	Raw       []byte // the file as written
	Config    jetstream.StreamConfig
	Consumers []Consumer
}

// Consumer is one declared durable consumer.
type Consumer struct {
	Stream string
	File   string
	Raw    []byte
	Config jetstream.ConsumerConfig
}

// Load parses every embedded declaration strictly: an unknown field is an
// error, so a typo cannot silently become a server default.
func Load() ([]Stream, error) {
	dirs, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, err
	}
	var out []Stream
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		s, err := loadStream(d.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Find returns the declared stream with the given name.
func Find(name string) (Stream, error) {
	all, err := Load()
	if err != nil {
		return Stream{}, err
	}
	for _, s := range all {
		if s.Config.Name == name {
			return s, nil
		}
	}
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = s.Config.Name
	}
	return Stream{}, fmt.Errorf("no stream %q is declared (declared: %s)", name, strings.Join(names, ", "))
}

// Consumer returns the consumer with the given durable name.
func (s Stream) Consumer(name string) (Consumer, error) {
	for _, c := range s.Consumers {
		if c.Config.Durable == name {
			return c, nil
		}
	}
	return Consumer{}, fmt.Errorf("stream %s declares no consumer %q", s.Config.Name, name)
}

// PerTenant names the consumer made from a declared durable for one tenant
// under fair scheduling (consumer.Fair): <durable>_<tenant>. Declared
// durables have no "_".
func PerTenant(durable, tenant string) string { return durable + "_" + tenant }

// DurableOf is the declared durable a consumer belongs to: the durable a
// per-tenant consumer was made from (perTenant true), or the name itself.
func DurableOf(name string) (durable string, perTenant bool) {
	durable, _, perTenant = strings.Cut(name, "_")
	return durable, perTenant
}

func loadStream(dir string) (Stream, error) {
	s := Stream{File: path.Join(dir, "stream.json")}
	if err := decodeFile(s.File, &s.Raw, &s.Config); err != nil {
		return Stream{}, err
	}
	if s.Config.Name != dir {
		return Stream{}, fmt.Errorf("%s: name %q must match its folder %q", s.File, s.Config.Name, dir)
	}
	names, err := fs.Glob(files, path.Join(dir, "consumers", "*.json"))
	if err != nil {
		return Stream{}, err
	}
	sort.Strings(names)
	for _, name := range names {
		c := Consumer{Stream: dir, File: name}
		if err := decodeFile(name, &c.Raw, &c.Config); err != nil {
			return Stream{}, err
		}
		if want := strings.TrimSuffix(path.Base(name), ".json"); c.Config.Durable != want {
			return Stream{}, fmt.Errorf("%s: durable_name %q must match the file name %q", name, c.Config.Durable, want)
		}
		s.Consumers = append(s.Consumers, c)
	}
	return s, nil
}

func decodeFile(name string, raw *[]byte, into any) error {
	b, err := files.ReadFile(name)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("streams/%s: %w", name, err)
	}
	*raw = b
	return nil
}
