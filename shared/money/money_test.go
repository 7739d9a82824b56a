package money_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/money"
)

func TestMoney(t *testing.T) {
	t.Parallel()
	tests := []struct {
		amount, currency, locale, want string
	}{
		{"183.48", "EUR", "en", "€183.48"},
		{"1234567.5", "USD", "en", "$1,234,567.50"},
		{"-12", "GBP", "en", "-£12.00"},
		{"1234.50", "EUR", "es", "1.234,50\u00a0€"},
		{"1234.50", "EUR", "es-MX", "1.234,50\u00a0€"},
		{"1234.50", "RUB", "ru", "1\u00a0234,50\u00a0₽"},
		{"0.125", "EUR", "en", "€0.125"},
		{"99", "CHF", "en", "99.00\u00a0CHF"},
		{"1500", "JPY", "en", "¥1,500"},
		{"12.5", "KWD", "ru_RU", "12,500\u00a0KWD"},
		{"12.3", "EUR", "fr", "€12.30"},
	}
	for _, tt := range tests {
		got := money.StyleOf(tt.locale).Money(tt.amount, tt.currency, money.Symbols)
		require.Equal(t, tt.want, got, "%s %s %s", tt.amount, tt.currency, tt.locale)
	}
}
