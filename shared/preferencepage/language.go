package preferencepage

import (
	"golang.org/x/text/language"

	"github.com/heraldhq/herald/shared/event"
)

// texts are the page's words in one language.
type texts struct {
	Lang, Title, Intro, Category, Required, Save, SavedNote, RequiredNote string
	Refused, NotFound, NotFoundDetail, FailedNote                         string
	Channels                                                              map[event.Channel]string
}

// languages are the page's languages; the first is the one used for any
// other.
var languages = []texts{
	{Lang: "en", Title: "Notification preferences", Intro: "Choose which notifications from %s reach you, and how.",
		Category: "Notifications", Required: "always sent", Save: "Save", SavedNote: "Your preferences are saved.",
		RequiredNote: "Some notifications are always sent: the business depends on them.",
		Refused:      "Nothing was saved: %s.",
		NotFound:     "This link does not work", NotFoundDetail: "It may have been altered or cut short. Try the link of a more recent message.",
		FailedNote: "Your preferences could not be saved just now. Nothing was changed; try again in a minute.",
		Channels: map[event.Channel]string{event.ChannelEmail: "Email", event.ChannelSMS: "SMS", event.ChannelWhatsApp: "WhatsApp",
			event.ChannelInbox: "In-app", event.ChannelPush: "Push"}},
	{Lang: "es", Title: "Preferencias de notificación", Intro: "Elija qué notificaciones de %s le llegan, y cómo.",
		Category: "Notificaciones", Required: "siempre se envían", Save: "Guardar", SavedNote: "Sus preferencias se han guardado.",
		RequiredNote: "Algunas notificaciones se envían siempre: el negocio depende de ellas.",
		Refused:      "No se ha guardado nada: %s.",
		NotFound:     "Este enlace no funciona", NotFoundDetail: "Puede que se haya alterado o cortado. Pruebe el enlace de un mensaje más reciente.",
		FailedNote: "No se han podido guardar sus preferencias ahora. No se ha cambiado nada; inténtelo de nuevo en un minuto.",
		Channels: map[event.Channel]string{event.ChannelEmail: "Correo", event.ChannelSMS: "SMS", event.ChannelWhatsApp: "WhatsApp",
			event.ChannelInbox: "En la aplicación", event.ChannelPush: "Push"}},
	{Lang: "ru", Title: "Настройки уведомлений", Intro: "Выберите, какие уведомления от %s вы получаете и как.",
		Category: "Уведомления", Required: "отправляются всегда", Save: "Сохранить", SavedNote: "Настройки сохранены.",
		RequiredNote: "Некоторые уведомления отправляются всегда: от них зависит работа.",
		Refused:      "Ничего не сохранено: %s.",
		NotFound:     "Ссылка не работает", NotFoundDetail: "Возможно, она изменена или обрезана. Откройте ссылку из более нового сообщения.",
		FailedNote: "Сейчас не удалось сохранить настройки. Ничего не изменено; попробуйте через минуту.",
		Channels: map[event.Channel]string{event.ChannelEmail: "Эл. почта", event.ChannelSMS: "SMS", event.ChannelWhatsApp: "WhatsApp",
			event.ChannelInbox: "В приложении", event.ChannelPush: "Push"}},
}

var matcher = language.NewMatcher(func() []language.Tag {
	tags := make([]language.Tag, len(languages))
	for i, l := range languages {
		tags[i] = language.Make(l.Lang)
	}
	return tags
}())

// textsFor are the page's words in the language of locale (a BCP 47 tag
// such as "ru" or "es-MX"), English when it has none of its languages.
func textsFor(locale string) texts {
	tag, err := language.Parse(locale)
	if err != nil {
		return languages[0]
	}
	_, i, confidence := matcher.Match(tag)
	if confidence == language.No {
		return languages[0]
	}
	return languages[i]
}
