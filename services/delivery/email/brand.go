package email

import "cmp"

// defaultColour is the header bar's colour for a sender without its own.
const defaultColour = "#1f4e79"

// Brand is how the HTML part of an email shows whom it comes from: a header
// bar in Colour carrying the logo at LogoURL, or Name when there is no
// logo. A tenant sets its own in the registry (logo_url, colour; its name);
// an email of a tenant without carries its sender's name in the default
// colour, without a logo.
//
// The HTML templates escape each field for where it goes: a LogoURL that is
// not http(s) or a relative URL, or a Colour that is not a plain CSS value,
// is replaced by a harmless placeholder rather than inserted.
type Brand struct {
	Name    string // shown in the header bar, and as the logo's alt text; defaults to the sender
	LogoURL string // the logo image, shown 40 px high; none when empty
	Colour  string // a CSS colour for the header bar, e.g. "#1f4e79"; defaults to that
}

// withDefaults fills what b leaves empty: sender as its name, the default
// colour.
func (b Brand) withDefaults(sender string) Brand {
	b.Name = cmp.Or(b.Name, sender)
	b.Colour = cmp.Or(b.Colour, defaultColour)
	return b
}
