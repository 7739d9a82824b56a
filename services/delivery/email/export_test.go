package email

import "github.com/heraldhq/herald/shared/notification"

// ComposeAlone renders d with Herald's templates for its recipient alone,
// sharing nothing with other recipients: what Compose must equal.
func (c *Composer) ComposeAlone(d notification.Delivery, content Content) (Message, error) {
	return c.render(d, content, nil)
}
