package alert

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxClassLen bounds a reason class, in characters: enough to tell classes
// apart, short enough for a line on a phone.
const maxClassLen = 120

// The parts of a reason that differ from one failure to the next.
var (
	doubleQuoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	backQuoted   = regexp.MustCompile("`[^`]*`")
	// A single quote opens a value only after a space or punctuation, so
	// the apostrophe in "can't" does not.
	singleQuoted = regexp.MustCompile(`(^|[\s(\[{=:,])'[^'\s][^']*'`)
	// "request id X", "trace_id=X", "RequestId: X"; after a bare space the
	// value must look like an id, so "message id is required" stays whole.
	labelledID = regexp.MustCompile(`(?i)\b((?:request|req|trace|span|message|msg|correlation|notification|event|job)[ _-]?id)` +
		`(\s*[:=]\s*[^\s)\]},;]+|\s+[^\s)\]},;]*[\d_-][^\s)\]},;]*)`)
	bareID = regexp.MustCompile(`(?i)\b(id\s*[:=]\s*)[^\s)\]},;{][^\s)\]},;]*`)

	email      = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)
	ipAddress  = regexp.MustCompile(`^\d{1,3}(\.\d{1,3}){3}(:\d+)?$`)
	statusCode = regexp.MustCompile(`^([1-5]\d\d|[245]\.\d{1,3}\.\d{1,3})$`) // HTTP, SMTP and SMTP enhanced codes
	number     = regexp.MustCompile(`^[+-]?\d[\d.,:_]*[a-zA-Zµ]{0,3}$`)      // 5, 2.5s, 10MB, 12:30
	// Words with digits that name a thing rather than an instance of it.
	technical = regexp.MustCompile(`(?i)^(x509|sha\d{1,3}|md5|utf-?(8|16)|base(32|64)|s3|ipv[46]|http/\d(\.\d)?|http[23]|h[23]|oauth2|tls1(\.[0-3])?|e164|rfc\d{3,5}|v\d)$`)
)

// The reason kinds: the closed set of values a metric's reason label takes.
const (
	KindMalformedEvent   = "malformed_event"   // not a JSON CloudEvent at all
	KindInvalidEvent     = "invalid_event"     // an event that fails validation
	KindMalformedMessage = "malformed_message" // a delivery or render request Herald cannot read
	KindRenderFailed     = "render_failed"     // a document that cannot be, or was not, rendered
	KindPermanent        = "permanent"         // a permanent delivery failure: a provider's refusal, a missing template
	KindGaveUp           = "gave_up"           // a notification out of tries
	KindExhausted        = "exhausted"         // a message out of deliveries (the server's MaxDeliver)
	KindOther            = "other"
)

// ReasonKinds lists every reason kind.
var ReasonKinds = []string{KindMalformedEvent, KindInvalidEvent, KindMalformedMessage, KindRenderFailed,
	KindPermanent, KindGaveUp, KindExhausted, KindOther}

// reasonKinds recognises the words each service starts its reasons with,
// most specific first.
var reasonKinds = []struct {
	kind  string
	match func(string) bool
}{
	{KindMalformedEvent, prefix("malformed event")},
	{KindInvalidEvent, prefix("invalid event")},
	{KindMalformedMessage, prefix("malformed delivery", "malformed render request")},
	{KindRenderFailed, func(r string) bool {
		return prefix("render failed", "cannot render")(r) || strings.Contains(r, "could not be rendered")
	}},
	{KindGaveUp, prefix("gave up after")},
	{KindExhausted, prefix("exhausted ")},
	{KindPermanent, func(r string) bool { return strings.Contains(r, "permanent: ") }},
}

func prefix(starts ...string) func(string) bool {
	return func(r string) bool {
		for _, s := range starts {
			if strings.HasPrefix(r, s) {
				return true
			}
		}
		return false
	}
}

// ReasonKind sorts a dead-letter reason into one of ReasonKinds. Unlike
// ReasonClass, which has as many classes as there are causes (and shapes
// of a publisher's input), it can label a metric: what an invalid event
// says is the publisher's choice, how many kinds there are is not.
func ReasonKind(reason string) string {
	for _, k := range reasonKinds {
		if k.match(reason) {
			return k.kind
		}
	}
	return KindOther
}

// ReasonClass reduces a dead-letter reason to its class, so that failures
// with the same cause count together: whitespace is collapsed; quoted values,
// request ids, ids, numbers, paths, URLs and email addresses are replaced by
// placeholders ("…", {id}, {n}, {path}, {url}, {email}, {ip}); status codes
// such as HTTP 400 or SMTP 550 5.1.1 are kept, since they tell causes apart;
// and the result is cut to 120 characters.
//
// "faulty: permanent: HTTP 400: Illegal address (request id fake-123)"
// becomes "faulty: permanent: HTTP 400: Illegal address (request id {id})".
func ReasonClass(reason string) string {
	s := strings.Join(strings.Fields(reason), " ")
	if s == "" {
		return "(no reason given)"
	}
	// The cheap tests first: most reasons have no quotes and no ids.
	if strings.Contains(s, `"`) {
		s = doubleQuoted.ReplaceAllString(s, `"…"`)
	}
	if strings.Contains(s, "`") {
		s = backQuoted.ReplaceAllString(s, "`…`")
	}
	if strings.Contains(s, "'") {
		s = singleQuoted.ReplaceAllString(s, `$1'…'`)
	}
	if strings.Contains(strings.ToLower(s), "id") {
		s = labelledID.ReplaceAllStringFunc(s, func(m string) string {
			sub := labelledID.FindStringSubmatch(m)
			return sub[1] + separator(sub[2]) + "{id}"
		})
		s = bareID.ReplaceAllString(s, "${1}{id}")
	}
	words := strings.Split(s, " ")
	for i, w := range words {
		words[i] = classifyWord(w)
	}
	return truncate(strings.Join(words, " "), maxClassLen)
}

// separator is what stood between an id's label and its value.
func separator(labelAndValue string) string {
	end := strings.IndexFunc(labelAndValue, func(r rune) bool { return !unicode.IsSpace(r) && r != ':' && r != '=' })
	if end < 0 {
		return labelAndValue
	}
	return labelAndValue[:end]
}

// classifyWord replaces a word's varying core, keeping the punctuation
// around it: "(fake-123)," becomes "({id}),".
func classifyWord(w string) string {
	core := strings.TrimLeft(w, `([{<"'`)
	lead := w[:len(w)-len(core)]
	core = strings.TrimRight(core, `)]}>"',;:.!?`)
	trail := w[len(lead)+len(core):]
	if k, v, ok := strings.Cut(core, "="); ok && k != "" && !strings.ContainsAny(k, "/:") {
		return lead + k + "=" + classifyCore(v) + trail
	}
	return lead + classifyCore(core) + trail
}

func classifyCore(s string) string {
	switch {
	case s == "" || s == "{id}":
		return s
	case strings.Contains(s, "://"):
		return "{url}"
	case strings.Contains(s, "@") && email.MatchString(s):
		return "{email}"
	case !strings.ContainsFunc(s, digitOrSlash):
		return s
	case technical.MatchString(s):
		return s
	case strings.Contains(s, "/"):
		return "{path}"
	case !strings.ContainsFunc(s, unicode.IsDigit):
		return s
	case statusCode.MatchString(s):
		return s
	case ipAddress.MatchString(s):
		return "{ip}"
	case number.MatchString(s):
		return "{n}"
	default:
		return "{id}"
	}
}

// truncate cuts s to at most limit characters, marking the cut with "…".
func truncate(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	runes := []rune(s)
	return string(runes[:limit-1]) + "…"
}

func digitOrSlash(r rune) bool { return r == '/' || unicode.IsDigit(r) }
