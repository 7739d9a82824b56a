package email

import (
	"github.com/heraldhq/herald/services/delivery/localized"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/templates"
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
	text, err := base.Clone()
	if err != nil {
		return Message{}, err
	}
	var p custom
	if p.text, err = templates.BoundText(text); err != nil {
		return Message{}, err
	}
	html, err := localized.ParseHTML(templateFiles, "templates/html/"+base.Name()+".tmpl", htmlFuncs, "templates/html/layout.html")
	if err != nil {
		return Message{}, err
	}
	if p.html, err = templates.BoundHTML(html[base.Name()]); err != nil {
		return Message{}, err
	}
	return c.render(d, content, &p)
}
