package recipient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // a time zone is checked, and used, on a machine without a zoneinfo database too

	"golang.org/x/text/language"

	"github.com/heraldhq/herald/shared/event"
)

// MaxData caps a subscriber's free data, as JSON.
const MaxData = 16 << 10

// Subscriber is one of a tenant's people, under the publisher's own id.
type Subscriber struct {
	Tenant string `json:"tenant"`
	// ID is the publisher's own id for the person: any printable text up
	// to MaxID bytes.
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Email is kept lowercased (Normalize), the form it is matched in.
	Email string `json:"email,omitempty"`
	// Phone (SMS) and WhatsApp are E.164 numbers such as +34600111222.
	Phone    string `json:"phone,omitempty"`
	WhatsApp string `json:"whatsapp,omitempty"`
	// Locale is a BCP 47 tag (ru, es-MX) the person's messages and
	// documents are written in.
	Locale string `json:"locale,omitempty"`
	// Timezone is an IANA time zone name (Europe/Moscow).
	Timezone string `json:"timezone,omitempty"`
	// Data is the publisher's own, any JSON up to MaxData bytes, for
	// templates.
	Data      json.RawMessage `json:"data,omitempty"`
	UpdatedAt time.Time       `json:"updated_at,omitzero"`
}

// Normalize returns s in the form it is kept: names and addresses
// trimmed, the email lowercased, data compacted.
func (s Subscriber) Normalize() Subscriber {
	s.Name = strings.TrimSpace(s.Name)
	s.Email = strings.ToLower(strings.TrimSpace(s.Email))
	s.Phone = strings.TrimSpace(s.Phone)
	s.WhatsApp = strings.TrimSpace(s.WhatsApp)
	s.Locale = strings.TrimSpace(s.Locale)
	s.Timezone = strings.TrimSpace(s.Timezone)
	if len(s.Data) > 0 {
		var b bytes.Buffer
		if json.Compact(&b, s.Data) == nil {
			s.Data = b.Bytes()
		}
	}
	return s
}

// Validate says everything wrong with a normalized s, one line per field
// named as the API names it ("email: …"). Its errors match ErrInvalid.
func (s Subscriber) Validate() error {
	var p problems
	p.check("id", CheckID(s.ID))
	p.check("name", event.CheckText(s.Name))
	if s.Email != "" && !event.ValidAddress(event.ChannelEmail, s.Email) {
		p.add("email", "%s is not an email address", quote(s.Email))
	}
	if s.Phone != "" && !event.ValidAddress(event.ChannelSMS, s.Phone) {
		p.add("phone", "%s is not an E.164 phone number such as +34600111222", quote(s.Phone))
	}
	if s.WhatsApp != "" && !event.ValidAddress(event.ChannelWhatsApp, s.WhatsApp) {
		p.add("whatsapp", "%s is not an E.164 phone number such as +34600111222", quote(s.WhatsApp))
	}
	p.check("locale", CheckLocale(s.Locale))
	p.check("timezone", CheckTimezone(s.Timezone))
	p.check("data", checkData(s.Data))
	return p.err()
}

// Channels are the channels s can be reached on, in event.Channels' order.
func (s Subscriber) Channels() []event.Channel {
	var out []event.Channel
	for _, ch := range event.Channels {
		if s.Address(ch) != "" {
			out = append(out, ch)
		}
	}
	return out
}

// Address is where s is reached on ch, or "".
func (s Subscriber) Address(ch event.Channel) string {
	switch ch {
	case event.ChannelEmail:
		return s.Email
	case event.ChannelSMS:
		return s.Phone
	case event.ChannelWhatsApp:
		// Not the phone: a number is not on WhatsApp unless its owner says so.
		return s.WhatsApp
	case event.ChannelInbox, event.ChannelPush:
		// Every subscriber has a feed; whether one has devices to push to
		// is the devices bucket's to say (the router checks it).
		return s.ID
	}
	return ""
}

// CheckLocale says what keeps tag from being a locale: not a well-formed
// BCP 47 tag, or naming a language nobody registered. Empty is fine.
func CheckLocale(tag string) error {
	if tag == "" {
		return nil
	}
	if err := event.CheckText(tag); err != nil {
		return err
	}
	if _, err := language.Parse(tag); err != nil || len(tag) > 35 {
		return fmt.Errorf("%s is not a known BCP 47 language tag such as ru or es-MX", quote(tag))
	}
	return nil
}

// CheckTimezone says what keeps name from being an IANA time zone. Empty
// is fine; "Local" and "UTC" spelled otherwise than by the database are
// not zones a person lives in ("UTC" is).
func CheckTimezone(name string) error {
	if name == "" {
		return nil
	}
	if err := event.CheckText(name); err != nil {
		return err
	}
	if name == "Local" || len(name) > 64 {
		return fmt.Errorf("%s is not an IANA time zone such as Europe/Moscow", quote(name))
	}
	if _, err := time.LoadLocation(name); err != nil {
		return fmt.Errorf("%s is not an IANA time zone such as Europe/Moscow", quote(name))
	}
	return nil
}

// checkData refuses data over MaxData, data that is not JSON, and a
// control character in any of its strings or keys (escaped or not: it
// reaches a template, then an email).
func checkData(data json.RawMessage) error {
	if len(data) == 0 {
		return nil
	}
	if len(data) > MaxData {
		return fmt.Errorf("is %d bytes, more than %d", len(data), MaxData)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return errors.New("is not JSON")
	}
	return checkValue(v)
}

func checkValue(v any) error {
	switch v := v.(type) {
	case string:
		return event.CheckText(v)
	case []any:
		for _, e := range v {
			if err := checkValue(e); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, e := range v {
			if err := event.CheckText(k); err != nil {
				return fmt.Errorf("a key %w", err)
			}
			if err := checkValue(e); err != nil {
				return err
			}
		}
	}
	return nil
}
