package email

import (
	"github.com/heraldhq/herald/shared/notification"
)

// ComposeAlone renders d with Herald's templates for its recipient alone,
// sharing nothing with other recipients: what Compose must equal.
func (c *Composer) ComposeAlone(d notification.Delivery, content Content) (Message, error) {
	return c.render(d, content, nil)
}

// ComposeBounded renders d with Herald's templates bounded as a tenant's
// are, as if the tenant had written Herald's words: what ComposeAlone
// must equal.
func (c *Composer) ComposeBounded(d notification.Delivery, content Content) (Message, error) {
	base := c.templates.Pick(d.Locale, d.Template+".subject")
	var (
		p   custom
		err error
	)
	if p.text, err = boundText(base, ""); err != nil {
		return Message{}, err
	}
	if p.html, err = boundHTML(base.Name(), ""); err != nil {
		return Message{}, err
	}
	return c.render(d, content, &p)
}
