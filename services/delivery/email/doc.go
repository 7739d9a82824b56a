// Package email is the email channel's side of delivery: the Provider
// interface every email provider implements (SES, SendGrid, SMTP, the
// mail-directory sink), the Message they send, the errors that tell a
// permanent refusal from a transient failure, and the Composer that renders a
// delivery into a localized message, text and HTML, from templates.
package email
