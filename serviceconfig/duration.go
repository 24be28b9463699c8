package serviceconfig

import (
	"fmt"
	"strconv"
	"time"
)

// maxDurationSeconds is the range of google.protobuf.Duration.
const maxDurationSeconds = 315_576_000_000

// parseDuration parses a google.protobuf.Duration in its proto3 JSON form:
// an optional sign, decimal seconds with at most 9 fraction digits, and an
// 's' ("1s", "0.25s", "-1.000000001s"). The mapping also accepts a missing
// integer part (".5s"), a bare point ("1.s") and a '+' sign, as Go's
// protojson does; lint warns about them because some clients do not.
// Values beyond the range of time.Duration saturate, as gRPC clients do.
func parseDuration(s string) (time.Duration, error) {
	sec, nanos, _, err := parseDurationParts(s)
	if err != nil {
		return 0, err
	}
	const maxSec = (1<<63 - 1) / int64(time.Second)
	neg := sec < 0 || nanos < 0
	if sec > maxSec || sec < -maxSec {
		if neg {
			return -1 << 63, nil
		}
		return 1<<63 - 1, nil
	}
	return time.Duration(sec)*time.Second + time.Duration(nanos), nil
}

// durationForm says which of the unusual spellings proto3 JSON allows a
// duration has.
type durationForm uint8

const (
	formNoInteger durationForm = 1 << iota // ".5s"
	formBarePoint                          // "1.s"
	formPlus                               // "+1s"
)

// parseDurationParts returns seconds and nanoseconds, both with the sign,
// and the unusual spellings the text uses.
func parseDurationParts(s string) (sec, nanos int64, form durationForm, err error) {
	orig := s
	if !hasSecondsSuffix(s) {
		return 0, 0, 0, notSecondsError(orig)
	}
	s, neg, form := cutDurationSign(s[:len(s)-1])
	sec, i := durationSeconds(s)
	if sec > maxDurationSeconds {
		return 0, 0, 0, fmt.Errorf("duration %q is out of range: at most %d seconds", orig, int64(maxDurationSeconds))
	}
	intDigits, fracDigits := i, 0
	if i < len(s) && s[i] == '.' {
		nanos, fracDigits = durationNanos(s[i+1:])
		i += 1 + fracDigits
		if fracDigits > 9 {
			return 0, 0, 0, fmt.Errorf("duration %q has %d fraction digits: at most 9 (nanoseconds) are allowed", orig, fracDigits)
		}
		if fracDigits == 0 {
			form |= formBarePoint
		}
	}
	if intDigits == 0 {
		if fracDigits == 0 {
			return 0, 0, 0, fmt.Errorf("%q is not a duration: it needs digits before the \"s\", like \"0.5s\"", orig)
		}
		form |= formNoInteger
	}
	if i != len(s) {
		return 0, 0, 0, fmt.Errorf("%q is not a duration: write seconds with an \"s\" suffix, like \"1.5s\" (no other units)", orig)
	}
	if neg {
		sec, nanos = -sec, -nanos
	}
	return sec, nanos, form, nil
}

// hasSecondsSuffix reports whether s ends in an 's' after a digit, a point
// or nothing: "1s", "1.s", "s". Other units, "1ms" or "1m", do not.
func hasSecondsSuffix(s string) bool {
	n := len(s)
	return n > 0 && s[n-1] == 's' && (n == 1 || isDigit(s[n-2]) || s[n-2] == '.')
}

// notSecondsError is the error for a duration without the 's' of seconds.
// When Go reads it as a duration of other units, the error gives it in
// seconds.
func notSecondsError(s string) error {
	if d, err := time.ParseDuration(s); err == nil {
		return fmt.Errorf("%q is not a duration: durations are seconds with an \"s\" suffix; write %q", s, formatDuration(d))
	}
	return fmt.Errorf("%q is not a duration: write seconds with an \"s\" suffix, like \"1.5s\"", s)
}

// cutDurationSign returns s without its sign, whether the sign was '-',
// and formPlus when it was '+'.
func cutDurationSign(s string) (rest string, neg bool, form durationForm) {
	if len(s) == 0 {
		return s, false, 0
	}
	switch s[0] {
	case '-':
		return s[1:], true, 0
	case '+':
		return s[1:], false, formPlus
	}
	return s, false, 0
}

// durationSeconds reads the decimal seconds at the start of s and returns
// them and the offset after their digits. Once the value passes
// maxDurationSeconds it reads no more digits into it, so that it cannot
// overflow: the caller refuses it.
func durationSeconds(s string) (sec int64, end int) {
	for end < len(s) && isDigit(s[end]) {
		if sec <= maxDurationSeconds {
			sec = sec*10 + int64(s[end]-'0')
		}
		end++
	}
	return sec, end
}

// durationNanos reads the fraction digits at the start of frac, after the
// point, and returns the nanoseconds of the first nine and the number of
// digits.
func durationNanos(frac string) (nanos int64, digits int) {
	for digits < len(frac) && isDigit(frac[digits]) {
		if digits < 9 {
			nanos = nanos*10 + int64(frac[digits]-'0')
		}
		digits++
	}
	for d := digits; d < 9; d++ {
		nanos *= 10
	}
	return nanos, digits
}

// formatDuration writes d in the JSON form of google.protobuf.Duration
// with exactly 9 fraction digits when it has any fraction, the form every
// gRPC client reads correctly (grpc-js misreads shorter fractions).
func formatDuration(d time.Duration) string {
	var b [32]byte
	return string(appendDuration(b[:0], d))
}

// appendDuration appends formatDuration(d) to dst. It is on the path of
// every duration a publisher rewrites to nine digits: fmt cost a tenth of
// publishing a typical service config.
func appendDuration(dst []byte, d time.Duration) []byte {
	u := uint64(d)
	if d < 0 {
		dst = append(dst, '-')
		u = -u
	}
	dst = strconv.AppendUint(dst, u/1e9, 10)
	if ns := u % 1e9; ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i > 0; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		dst = append(dst, frac[:]...)
	}
	return append(dst, 's')
}
