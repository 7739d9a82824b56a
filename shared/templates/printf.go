package templates

import (
	"fmt"
	"reflect"
	"strings"
)

// Bounds printfSize assumes of what fmt writes.
const (
	// growth is how much longer than its argument's plain form a verb can
	// write it: "% #x" writes "0x41 " for each byte.
	growth = 6
	// verbOverhead covers a verb's own framing: "%!d(MISSING)", a "0x".
	verbOverhead = 32
	// starWidth is what a width or precision taken from an argument ('*')
	// may be: fmt accepts up to a million.
	starWidth = 1_000_000
	// maxNumber caps the widths and precisions read, as fmt does (it
	// refuses more than a million).
	maxNumber = 10_000_000
)

// printfSize is at least the length of fmt.Sprintf(format, args...),
// found without making it: for each verb, its width and precision, and
// growth times the argument it prints; then every argument again, in case
// fmt lists them as extra.
func printfSize(format string, args []any) int {
	sizes := make([]int, len(args))
	size := len(format)
	for i, a := range args {
		sizes[i] = argSize(a)
		size += sizes[i] + verbOverhead
	}
	arg := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		var width, precision int
		i++
		for i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0 {
			i++
		}
		arg, i = argIndex(format, i, arg)
		width, i = number(format, i)
		if i < len(format) && format[i] == '.' {
			arg, i = argIndex(format, i+1, arg)
			precision, i = number(format, i)
		}
		arg, i = argIndex(format, i, arg)
		if i >= len(format) || format[i] == '%' {
			continue
		}
		size += width + precision + verbOverhead
		if 0 <= arg && arg < len(sizes) {
			size += growth * sizes[arg]
		}
		arg++
	}
	return size
}

// argIndex reads an explicit argument index, "[n]", at format[i], if any:
// the argument the next verb prints.
func argIndex(format string, i, arg int) (int, int) {
	if i >= len(format) || format[i] != '[' {
		return arg, i
	}
	end := strings.IndexByte(format[i:], ']')
	if end < 0 {
		return arg, i
	}
	n, _ := number(format[i+1:i+end], 0)
	return n - 1, i + end + 1
}

// number reads a width or precision at format[i]: digits, or '*' for one
// taken from an argument.
func number(format string, i int) (int, int) {
	if i < len(format) && format[i] == '*' {
		return starWidth, i + 1
	}
	n := 0
	for ; i < len(format) && '0' <= format[i] && format[i] <= '9'; i++ {
		n = min(n*10+int(format[i]-'0'), maxNumber)
	}
	return n, i
}

// argSize is the length of a's plain form, or more.
func argSize(a any) int {
	v := reflect.ValueOf(a)
	switch v.Kind() {
	case reflect.String:
		return v.Len()
	case reflect.Bool:
		return len("false")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return 72 // %b of a 64-bit integer, with its sign and prefix
	case reflect.Float32, reflect.Float64:
		return 330 // %f of the largest float64
	case reflect.Complex64, reflect.Complex128:
		return 2*330 + 4
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Len()
		}
	}
	// Anything else is data a template was given, not text it made: its
	// longest forms are measured.
	return max(len(fmt.Sprintf("%+v", a)), len(fmt.Sprintf("%#v", a)))
}
